"""tools/calibrate.py: the one-command calibration's steps, in order, with their inputs."""
import json
import os
import shlex
import shutil

import pytest

from tool_loader import ROOT, load_tool

calibrate = load_tool('calibrate')
SHIPPED = os.path.join(ROOT, 'config', 'lost_detector.yaml')


def shared_with_stata(tmp_path):
    """A shared data folder holding (a stand-in for) the Stata basement map."""
    shared = tmp_path / 'shared'
    stata = shared / calibrate.STATA
    stata.parent.mkdir(parents=True)
    stata.write_text('image: stata.pgm\n')
    return str(shared)


class FakeSteps:
    """subprocess.call for main(): records each command; a recording writes a whole run, a
    tool writes the shipped file where its --out or --write says; ``fail`` names the first
    command (by a word in it) that exits 1."""

    def __init__(self, fail=None):
        self.calls = []
        self.fail = fail

    def __call__(self, argv):
        self.calls.append(argv)
        if self.fail and any(self.fail in word for word in argv):
            return 1
        if argv[0] == 'rosrun':
            out = argv[argv.index('--out') + 1]
            os.makedirs(out, exist_ok=True)
            trials = int(argv[argv.index('--trials') + 1])
            with open(os.path.join(out, 'detection.json'), 'w') as stream:
                json.dump({'command': shlex.join(argv),
                           'trials': [{}] * trials}, stream)
            open(os.path.join(out, 'detection_stream.json'), 'w').close()
        else:
            flag = '--write' if '--write' in argv else '--out'
            shutil.copyfile(SHIPPED, argv[argv.index(flag) + 1])
        return 0


def run_name(argv):
    """The training run a recording command writes (its --out folder's name)."""
    return os.path.basename(argv[argv.index('--out') + 1])


def test_records_eleven_runs_then_fits_keeps_and_adds_strips(tmp_path, monkeypatch, capsys):
    fake = FakeSteps()
    monkeypatch.setattr(calibrate.subprocess, 'call', fake)
    out = tmp_path / 'out'
    assert calibrate.main(['--out', str(out), '--shared', shared_with_stata(tmp_path),
                           '--date', '2026-12-07']) == 0
    records = [c for c in fake.calls if c[0] == 'rosrun']
    assert [run_name(c) for c in records] == [r[0] for r in calibrate.RUNS]
    # the suite names the stream by its label: the calibration fits only on lab and
    # stata_basement, the maps' own names, so no label is given
    assert not any('--label' in c for c in records)
    assert all(c[c.index('--detector-config') + 1] == str(out / 'recorded_with.yaml')
               for c in records)
    stale = [c for c in records if '--stale' in c]
    assert len(stale) == 5 and all(c[c.index('--stale') + 1] == '3' for c in stale)
    assert all(c[c.index('--trials') + 1] == '12' for c in records)
    assert sum('stata_basement.yaml' in c[c.index('--map') + 1] for c in records) == 5
    fit, keep, strip = fake.calls[len(records):]
    train = str(out / 'train')
    assert [a for a in fit if a.startswith(train)] == [
        os.path.join(train, n) for n in calibrate.FIT_RUNS]
    assert fit[fit.index('--open-beams') + 1] == 'off'
    assert len([a for a in keep if a.startswith(train)]) == 11
    assert keep[keep.index('--keep-fit') + 1] == str(out / 'fit.yaml')
    assert keep[keep.index('--burst') + 1:keep.index('--burst') + 5] == ['4', '5', '0.3', '0']
    assert '--unmapped-ends' in keep and keep[keep.index('--date') + 1] == '2026-12-07'
    assert strip[strip.index('--base') + 1] == str(out / 'keep_fit.yaml')
    assert strip[strip.index('--write') + 1] == str(out / 'strip.yaml')
    assert (out / 'lost_detector.yaml').is_file() and not (out / 'strip.yaml').exists()
    log = (out / 'commands.sh').read_text().splitlines()
    assert len(log) == 1 + 2 * 14 + 1
    assert log[-3] == 'cp %s %s' % (out / 'keep_fit.yaml', out / 'strip.yaml')
    assert 'differs from' in capsys.readouterr().out


def test_a_failed_recording_stops_before_fitting(tmp_path, monkeypatch, capsys):
    fake = FakeSteps(fail='lab_101')
    monkeypatch.setattr(calibrate.subprocess, 'call', fake)
    assert calibrate.main(['--out', str(tmp_path / 'out'),
                           '--shared', shared_with_stata(tmp_path)]) == 1
    assert len(fake.calls) == 4 and fake.calls[-1][0] == 'rosrun'
    assert 'record 4/11: lab_101' in capsys.readouterr().err


def test_resume_keeps_finished_recordings_only(tmp_path, monkeypatch):
    out = tmp_path / 'out'
    shared = shared_with_stata(tmp_path)
    monkeypatch.setattr(calibrate.subprocess, 'call', FakeSteps(fail='strip_rule.py'))
    assert calibrate.main(['--out', str(out), '--shared', shared]) == 1
    assert not (out / 'lost_detector.yaml').exists()        # no result without the strip rule
    # one run recorded by another command, one cut short: both recorded again
    other = out / 'train' / 'lab_100' / 'detection.json'
    other.write_text(other.read_text().replace('--clutter 8', '--clutter 4'))
    (out / 'train' / 'stata_100' / 'detection.json').write_text(json.dumps({
        'command': json.loads((out / 'train' / 'stata_100' / 'detection.json').read_text())[
            'command'], 'trials': [{}] * 5}))
    fake = FakeSteps()
    monkeypatch.setattr(calibrate.subprocess, 'call', fake)
    assert calibrate.main(['--out', str(out), '--shared', shared, '--resume']) == 0
    assert [run_name(c) for c in fake.calls if c[0] == 'rosrun'] == ['lab_100', 'stata_100']
    assert '# record lab_clean_100: kept (--resume)' in (out / 'commands.sh').read_text()
    # the same runs with fewer trials are other commands: every run recorded again
    fake = FakeSteps()
    monkeypatch.setattr(calibrate.subprocess, 'call', fake)
    assert calibrate.main(['--out', str(out), '--shared', shared, '--resume',
                           '--trials', '2']) == 0
    assert len([c for c in fake.calls if c[0] == 'rosrun']) == 11


def test_a_step_that_cannot_start_is_named(tmp_path, monkeypatch, capsys):
    def missing(argv):
        raise FileNotFoundError(2, 'No such file or directory', argv[0])
    monkeypatch.setattr(calibrate.subprocess, 'call', missing)
    assert calibrate.main(['--out', str(tmp_path / 'out'),
                           '--shared', shared_with_stata(tmp_path)]) == 1
    assert 'step "record 1/11: lab_clean_100" could not start' in capsys.readouterr().err


def test_missing_stata_map_refuses_to_start(tmp_path, monkeypatch, capsys):
    fake = FakeSteps()
    monkeypatch.setattr(calibrate.subprocess, 'call', fake)
    assert calibrate.main(['--out', str(tmp_path / 'out'), '--shared',
                           str(tmp_path / 'nowhere')]) == 1
    assert fake.calls == []
    assert 'stata_basement.yaml is missing' in capsys.readouterr().err


def test_bad_date_is_named():
    with pytest.raises(ValueError, match='--date 2026-13-01'):
        calibrate.check_date('2026-13-01')


def test_install_copies_the_result_over_the_shipped_file(tmp_path, monkeypatch, capsys):
    root = tmp_path / 'root'
    (root / 'config').mkdir(parents=True)
    (root / 'maps').mkdir()
    (root / 'maps' / 'lab.yaml').write_text('image: lab.pgm\n')
    (root / 'config' / 'lost_detector.yaml').write_text('strip_check: {count: 3}\n')
    monkeypatch.setattr(calibrate, 'ROOT', str(root))
    monkeypatch.setattr(calibrate.subprocess, 'call', FakeSteps())
    assert calibrate.main(['--out', str(tmp_path / 'out'), '--shared',
                           shared_with_stata(tmp_path), '--install']) == 0
    with open(SHIPPED) as stream:
        assert (root / 'config' / 'lost_detector.yaml').read_text() == stream.read()
    assert 'strip_check/count' in capsys.readouterr().out


def test_differences_name_changed_added_and_removed_keys(tmp_path):
    old, new = tmp_path / 'old.yaml', tmp_path / 'new.yaml'
    old.write_text('a: {b: 1, c: 2}\nd: 3\n')
    new.write_text('a: {b: 1, c: 5}\ne: 4\n')
    assert calibrate.differences(str(old), str(new)) == [
        ('a/c', 2, 5), ('d', 3, None), ('e', None, 4)]
