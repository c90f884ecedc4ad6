"""`keel doctor`: checks that a brain does what its files say, each finding with its fix."""

from keel.doctor.findings import CHECKS, Finding, Report
from keel.doctor.render import render
from keel.doctor.run import run_doctor

__all__ = ["CHECKS", "Finding", "Report", "render", "run_doctor"]
