"""Background capture: a spooled queue and the worker that extracts and stores turns."""

from memtrellis.capture.config import CaptureConfig
from memtrellis.capture.service import CaptureService
from memtrellis.capture.spool import Spool
from memtrellis.capture.worker import CaptureStats, CaptureWorker

__all__ = ["CaptureConfig", "CaptureService", "CaptureStats", "CaptureWorker", "Spool"]
