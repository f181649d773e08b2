"""Every numeric option at the edges of its documented range, on the stream
and changegroup paths, in each closing mode (issue 39): a value the help
allows applies as stock does, any other ends in one line naming the option,
never a traceback.  ``pytest -s`` prints the table (tests/helpers/optionsweep.py
prints it on its own)."""

import os
import shutil
import sys

from conftest import cram_environment

import optionsweep

HG = os.path.join(os.path.dirname(sys.executable), "hg")


def test_every_value_applies_or_is_refused_in_one_line(tmp_path):
    env = cram_environment(tmp_path)
    work = optionsweep.scratch(str(tmp_path))
    try:
        rows = optionsweep.Sweep(HG, env, work).run()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n" + "\n".join(optionsweep.format_row(row) for row in rows))
    wrong = [optionsweep.format_row(r) for r in rows if optionsweep.wrong(r)]
    assert not wrong, "\n".join(wrong)
    # every option, every value, every mode and path
    values = sum(len(optionsweep.values(*o[2:])) for o in optionsweep.OPTIONS)
    cells = sum(len(paths) for __, __, paths in optionsweep.MODES)
    assert len(rows) == values * cells
