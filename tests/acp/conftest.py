"""appserver's own Python SDK (clients/python) plays the app host and the WebSocket client of the
same threads; its test helpers start the server. Both are imported from the repository."""

import sys
from pathlib import Path

repo = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(repo / "clients" / "python"))
sys.path.insert(0, str(repo / "clients" / "python" / "tests"))
