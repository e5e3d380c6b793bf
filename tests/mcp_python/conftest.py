"""The appserver Python SDK (clients/python) plays the app host and the approving desktop client;
its test helpers start the server. Both are imported from the repository, not installed."""

import sys
from pathlib import Path

repo = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(repo / "clients" / "python"))
sys.path.insert(0, str(repo / "clients" / "python" / "tests"))
