"""Storage faults for every Python process started with this directory on PYTHONPATH.

Python imports ``sitecustomize`` when it starts, before any of tierflow. The fault tests put this
directory on a child's PYTHONPATH (``tests.support.faulty_storage.storage_fault_env``), so the
CLI, a DAG run or a Spark Python worker meets the faults of TIERFLOW_STORAGE_FAULTS in its own
storage calls, while tierflow's factory knows nothing of them. Without the variable it does
nothing.
"""

import os

if os.environ.get("TIERFLOW_STORAGE_FAULTS", "").strip():
    from tests.support.faulty_storage import install_from_env

    install_from_env()
