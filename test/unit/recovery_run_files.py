"""Writes the files of a `bench recovery` output folder, for the unit tests of the tools that
read them."""
import json

#: How a recovery node line begins in rosout.log, after its sim time.
RECOVERY_HEAD = ' INFO /lost_and_found [r.py:1(f)] [topics: /a] recovery: '


def write_run(folder, trials, recovery_lines):
    """``folder``/recovery.json with ``trials``, and one rosout.log holding the recovery node's
    ``(sim time, text)`` lines."""
    (folder / 'recovery.json').write_text(json.dumps({'trials': trials}))
    log = folder / 'logs' / 'recovery' / 'x'
    log.mkdir(parents=True)
    (log / 'rosout.log').write_text(''.join(
        '%s%s%s\n' % (t, RECOVERY_HEAD, text) for t, text in recovery_lines))
