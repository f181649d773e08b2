"""Saying what the extension does: ``fastio.report`` (``report``), the
latency probe (``probe``) that ``auto`` mode decides from (``autotune``),
and ``hg debugfastio`` (``debugfastio``)."""
