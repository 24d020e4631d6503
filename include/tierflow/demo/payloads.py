"""Record keys, values and headers that look like real application traffic.

JSON with repeated field names is what most topics carry, and it is also what makes the
compressed batches really compressed (kafka-python stores a batch uncompressed when the codec
does not shrink it).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from tierflow.kafka.batch_builder import Record

_ORDER_STATUSES = ("CREATED", "PAID", "PACKED", "SHIPPED", "DELIVERED", "CANCELLED")
_CURRENCIES = ("EUR", "EUR", "EUR", "USD", "GBP")
_PAGES = ("/", "/search", "/products/{n}", "/cart", "/checkout", "/account/orders")
_EVENTS = ("page_view", "page_view", "page_view", "click", "add_to_cart", "scroll")
_AGENTS = (
    "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36",
)
_PAYMENT_METHODS = ("card", "card", "sepa_debit", "paypal", "bank_transfer")


def make_record(topic: str, rng: random.Random, timestamp: int) -> Record:
    """A record for ``topic``; unknown topic names get a generic event."""
    factory = _FACTORIES.get(topic, _generic)
    key, value = factory(rng)
    return Record(key=key, value=value, timestamp=timestamp, headers=_headers(rng))


def _json(value: dict[str, object]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _order(rng: random.Random) -> tuple[bytes | None, bytes]:
    customer = f"cust-{rng.randrange(20_000):05d}"
    items = [
        {"sku": f"SKU-{rng.randrange(900):04d}", "qty": rng.randint(1, 3), "price_cents": price}
        for price in (rng.randrange(199, 9_999) for _ in range(rng.randint(1, 4)))
    ]
    total = sum(int(item["price_cents"]) * int(item["qty"]) for item in items)
    value = {
        "order_id": f"ord-{rng.randrange(10**8):08d}",
        "customer_id": customer,
        "status": rng.choice(_ORDER_STATUSES),
        "currency": rng.choice(_CURRENCIES),
        "items": items,
        "total_cents": total,
    }
    return customer.encode(), _json(value)


def _click(rng: random.Random) -> tuple[bytes | None, bytes]:
    session = f"sess-{rng.randrange(16**8):08x}"
    value = {
        "session_id": session,
        "user_id": None if rng.random() < 0.3 else f"user-{rng.randrange(50_000):05d}",
        "event": rng.choice(_EVENTS),
        "url": rng.choice(_PAGES).format(n=rng.randrange(5_000)),
        "user_agent": rng.choice(_AGENTS),
    }
    # Anonymous traffic is spread round-robin by the producer, so it carries no key.
    key = None if value["user_id"] is None else session.encode()
    return key, _json(value)


def _payment(rng: random.Random) -> tuple[bytes | None, bytes]:
    order = f"ord-{rng.randrange(10**8):08d}"
    value = {
        "payment_id": f"pay-{rng.randrange(16**10):010x}",
        "order_id": order,
        "method": rng.choice(_PAYMENT_METHODS),
        "amount_cents": rng.randrange(199, 250_000),
        "currency": rng.choice(_CURRENCIES),
        "status": rng.choice(("AUTHORIZED", "CAPTURED", "CAPTURED", "REFUNDED")),
    }
    return order.encode(), _json(value)


def _changelog(rng: random.Random) -> tuple[bytes | None, bytes | None]:
    """A compacted topic's traffic: updates to a few hundred entities, one in ten a deletion
    (a tombstone: the key with no value)."""
    entity = f"entity-{rng.randrange(300):03d}"
    if rng.random() < 0.1:
        return entity.encode(), None
    value = {"entity": entity, "version": rng.randrange(10_000), "state": "x" * rng.randint(20, 80)}
    return entity.encode(), _json(value)


def _generic(rng: random.Random) -> tuple[bytes | None, bytes]:
    entity = f"entity-{rng.randrange(10_000):04d}"
    value = {"entity": entity, "version": rng.randrange(100), "payload": "x" * rng.randint(20, 80)}
    return entity.encode(), _json(value)


def _headers(rng: random.Random) -> tuple[tuple[str, bytes | None], ...]:
    """Tracing headers on some records, as instrumented clients add them."""
    if rng.random() < 0.6:
        return ()
    return (
        (
            "traceparent",
            f"00-{rng.randrange(16**32):032x}-{rng.randrange(16**16):016x}-01".encode(),
        ),
        ("content-type", b"application/json"),
    )


_FACTORIES: dict[str, Callable[[random.Random], tuple[bytes | None, bytes | None]]] = {
    "orders": _order,
    "clickstream": _click,
    "payments": _payment,
    "changelog": _changelog,
}
