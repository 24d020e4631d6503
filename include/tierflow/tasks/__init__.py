"""What DAG tasks run: plain functions taking and returning JSON-able values (XCom-friendly)."""
