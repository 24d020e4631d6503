"""Helper, not a benchmark: Spark ``local[N]`` as the benchmarks time it, a job of one Spark
task per row, with Spark's start-up and the Python workers' first task kept out of the figure.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# What a Spark task runs over its rows (one row each here).
Work = Callable[[Iterable[dict]], Iterator]


def local_spark(cores: int, app: str) -> SparkSession:
    """A local[cores] session running this Python, its UI and progress bars off."""
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def warm(spark: SparkSession, work: Work) -> None:
    """One empty partition per core: each Python worker starts and opens its storage."""
    sc = spark.sparkContext
    sc.parallelize([], sc.defaultParallelism).mapPartitions(lambda part: work(part)).collect()


def timed_collect(spark: SparkSession, rows: list[dict], work: Work) -> tuple[float, list]:
    """Seconds of the collect() over one Spark task per row, and its results."""
    started = time.perf_counter()
    rdd = spark.sparkContext.parallelize(rows, len(rows))
    results = rdd.mapPartitions(lambda part: work(part)).collect()
    return time.perf_counter() - started, results
