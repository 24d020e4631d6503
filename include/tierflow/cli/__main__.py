from tierflow.cli import run

run()
