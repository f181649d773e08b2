"""Every numeric option at the edges of its documented range, on the stream
and changegroup paths, in each closing mode (issue 39): a value the help
allows applies as stock does, any other ends in one line naming the option,
never a traceback.  ``pytest -s`` prints the table (tests/optionsweep.py
prints it on its own)."""

import os
import sys

from conftest import cram_environment

import optionsweep

HG = os.path.join(os.path.dirname(sys.executable), "hg")


def test_every_value_applies_or_is_refused_in_one_line(tmp_path):
    env = cram_environment(tmp_path)
    work = tmp_path / "sweep"
    work.mkdir()
    rows = optionsweep.Sweep(HG, env, str(work)).run()
    table = "\n".join(optionsweep.format_row(row) for row in rows)
    print("\n" + table)
    wrong = [optionsweep.format_row(r) for r in rows if optionsweep.wrong(r)]
    assert not wrong, "\n".join(wrong)
    # every option, every value, every mode and path
    assert len(rows) == sum(
        len(optionsweep.values(smallest, huge))
        for __, __, smallest, huge in optionsweep.OPTIONS
    ) * sum(len(paths) for __, __, paths in optionsweep.MODES)
