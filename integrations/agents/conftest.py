"""Where CrewAI is not installed (the dev environment: its pins clash with the core's
extras), its module is not collected for doctests; ``nox -s crewai`` runs it."""

from __future__ import annotations

import importlib.util

collect_ignore = [] if importlib.util.find_spec("crewai") else ["src/memtrellis_agents/crewai.py"]
