"""The compute API's long-lived parts, shared by every request of one worker."""

from __future__ import annotations

from dataclasses import dataclass

from berth.common.db import Database
from berth.config import ComputeSettings


@dataclass
class ComputeService:
    settings: ComputeSettings
    api_db: Database
