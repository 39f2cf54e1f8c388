"""Calibrate the lost detector's YAML from the detection suite's recorded pose streams.

The detection suite (:mod:`lost_and_found.bench.detection`) writes ``DIR/detection_stream.json``
(every amcl_pose reading with its error against the ground truth and the phase of its trial)
next to ``DIR/detection.json`` (the trials, the seed and the command). From *training* runs
(the ``lab`` map and the MIT Stata Center basement, seeds >= 100) this module:

1. labels every reading (:func:`label_readings`): *normal* when the estimate is right in a
   phase of normal operation, *lost* when it is wrong in any phase, otherwise dropped;
2. computes the node's features of every reading (:func:`reading_features`): the two
   covariance features, and the scan miss fraction when the stream has it (with the through
   and short fractions it is weighed from, for ``scan_check/through_lost``);
3. fits ``sklearn.naive_bayes.GaussianNB`` on the labelled readings (:func:`fit_classifier`):
   class means and standard deviations become ``slice_mu`` / ``slice_sigma`` (and
   ``scan_miss_mu`` / ``scan_miss_sigma``, fitted on the readings that have a scan: Naive
   Bayes fits every feature on its own, so this is the same fit) and the class frequency
   becomes ``tier0_normal_prior``;
4. chooses ``prob_thresh`` and the window parameters by a grid search (:func:`grid_search`)
   that replays :class:`~lost_and_found.core.lost_detector.LostDetector` over every training
   stream in order and scores it exactly as the suite does (:func:`score_recordings`): first
   no false tier-2 alarm during normal driving, then most delocalizations detected within
   :data:`~lost_and_found.bench.detection.WITHIN` s of driving (the target's measure: the
   seconds in which the robot moved, from the run's ``detection_truth.json``; elapsed
   seconds for a run without it), then the shortest mean delay;
5. writes the node's YAML with a comment above every key (:func:`render_yaml`).

The same scoring evaluates any YAML on held-out streams (:func:`evaluate`): the office map, the
real maps and seeds 0-99 are never fitted on (:func:`check_training` refuses them).

Everything here is pure (files in, numbers and text out) and deterministic: the same inputs give
a byte-identical YAML.
"""
import dataclasses
import itertools
import math
import os
import re

import numpy as np
from sklearn.naive_bayes import GaussianNB

from lost_and_found.bench import detection, detectors, report
from lost_and_found.core.lost_detector import LostDetector, LostDetectorConfig, \
    classifier_variances, covariance_features
from lost_and_found.core.scan_agreement import through_share, weighted_miss

#: The stream's columns, in the order detection.write_stream writes them: the miss fraction
#: as the recording config weighed it, then its two kinds (the through and short fractions,
#: core/scan_agreement.py), from which any short_weight can be weighed again, then the two
#: kinds at every candidate scan_check/min_range (the stream's ``min_ranges``), without and
#: with open beams (scan_check/open_beams).
FIELDS = ('t', 'x', 'y', 'yaw', 'var_x', 'var_y', 'cov_xy', 'var_yaw', 'error_xy', 'error_yaw',
          'phase', 'scan_miss', 'scan_through', 'scan_short', 'scan_near', 'scan_open')
#: Streams recorded with the through span (core/scan_agreement.through_span) after them, and
#: then with the through spans without and with the open beams; the calibration's fit does not
#: use them, the replays of the burst rule do.
SPAN_FIELDS = FIELDS + ('scan_span',)
SPANS_FIELDS = SPAN_FIELDS + ('scan_spans',)
#: Streams recorded before the open beams were, before the candidate min_ranges were, before
#: the two kinds were, and before the scan feature existed.
NEAR_FIELDS = FIELDS[:-1]
SPLIT_FIELDS = FIELDS[:-2]
MISS_FIELDS = FIELDS[:-4]
OLD_FIELDS = FIELDS[:-5]
#: The short_weight values the calibration tries (scan_check/short_weight), when the training
#: streams hold the two kinds of misses.
SHORT_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: The scan_check/min_range values (m) it tries, when the training streams hold the misses at
#: them (every one of detectors.MIN_RANGES by default).
MIN_RANGES = detectors.MIN_RANGES
#: The scan_check/open_beams values it tries, when the training streams hold the misses with
#: open beams too.
OPEN_BEAMS = (False, True)
#: Phases a reading may carry; ``teleport`` and ``bringup`` follow a delocalizing event.
PHASES = ('settle', 'normal', 'teleport', 'bringup', 'other')
#: Phases in which a right estimate is a sample of the normal class.
NORMAL_PHASES = ('normal', 'settle', 'other')
#: Labels of :func:`label_readings`.
NORMAL, LOST, AMBIGUOUS = 0, 1, -1
#: The only maps and seeds that may be fitted on; everything else is held out for evaluation.
#: ``stata_basement`` is ../shared/data's MIT Stata Center basement (a real map, in none of
#: the results tables).
TRAINING_MAPS = ('lab', 'stata_basement')
MIN_TRAINING_SEED = 100
#: Significant digits of the fitted numbers in the YAML (the grid search uses the rounded
#: values, so the file reproduces the training scores exactly).
DIGITS = 4
#: The files the calibration regenerates (named in their headers), and where they are: the
#: shipped default, fitted without open beams (a TurtleBot2's Kinect, through
#: depthimage_to_laserscan, reports no return as NaN: open beams get nothing from it), and the
#: one for a laser whose driver reports no return as +inf (REP 117), fitted with them.
TARGET = 'config/lost_detector.yaml'
OPEN_BEAMS_TARGET = 'config/lost_detector_open_beams.yaml'
ROOT = os.path.join(os.path.dirname(os.path.realpath(__file__)), '..', '..', '..')
TARGET_PATH = os.path.join(ROOT, TARGET)
OPEN_BEAMS_TARGET_PATH = os.path.join(ROOT, OPEN_BEAMS_TARGET)
#: Keep the windows at least this many readings long: shorter ones would fit single readings.
MIN_WINDOW = 4
#: Least fitted standard deviation of the scan miss fraction (a fraction of beams).
MIN_SCAN_SIGMA = 0.05


class CalibrationError(ValueError):
    """Bad calibration input (a file, a value, held-out data); the message names it."""


@dataclasses.dataclass(frozen=True)
class Grid:
    """The values the grid search tries (every combination with queue_min <= window).

    Attributes:
        prob_thresh: candidate ``modified_prob_classifier/prob_thresh`` values.
        window_meta_tier2_lost: candidate tier-2 windows (readings).
        ratio_thresh_detections_tier2_lost: candidate lost ratios.
        queue_min: candidate minimum queue lengths (readings).
        window_meta_tier0_normal: candidate runs of normal readings ending tier 2.
        settle_readings: candidate numbers of readings judged by the scan alone after a
            start or reset.
        through_lost: candidate ``scan_check/through_lost`` values (1: off, the default grid's
            only one; ``tools/calibrate_detector.py --through-lost`` names others).
    """

    prob_thresh: tuple = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999)
    window_meta_tier2_lost: tuple = (4, 6, 8, 10, 12, 15, 20)
    ratio_thresh_detections_tier2_lost: tuple = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
    queue_min: tuple = (3, 5)
    window_meta_tier0_normal: tuple = (4, 6, 10, 15)
    settle_readings: tuple = (0, 8, 12, 16)
    through_lost: tuple = (1.0,)

    def combinations(self):
        """Every valid parameter dict, in a fixed order."""
        keys = ('prob_thresh', 'window_meta_tier2_lost', 'ratio_thresh_detections_tier2_lost',
                'queue_min', 'window_meta_tier0_normal', 'settle_readings', 'through_lost')
        for values in itertools.product(*(getattr(self, k) for k in keys)):
            params = dict(zip(keys, values))
            if params['queue_min'] <= params['window_meta_tier2_lost']:
                yield params


@dataclasses.dataclass
class Recording:
    """One detection-suite run: its readings, their errors and phases, its trials.

    Attributes:
        path: the run's folder (or file) as given.
        label: the map's label.
        readings: ``(t, var_x, var_y, cov_xy, var_yaw, scan miss or None)`` per reading (the
            :mod:`~lost_and_found.bench.detectors` format).
        errors: ``(error_xy [m], error_yaw [rad])`` per reading; inf when unknown.
        phases: the phase of every reading.
        trials: per trial ``t_normal``, ``t_event``, ``t_end``, ``kind``, ``distance`` and
            ``pose_fixes`` (from ``detection.json``, or inferred from the phases, without
            pose fixes).
        seed: the run's seed (None when ``detection.json`` is absent).
        command: the command that recorded it (None when unknown).
        phase_seconds: the suite's phase durations (``settle`` is used by the scoring).
        trials_inferred: True when the trials were inferred from the phases.
        splits: ``(through, short)`` miss fractions per reading (None where it has no scan
            feature), or None for a stream that did not record them.
        near: per reading, the ``(through, short)`` pairs (or None) at each of
            ``min_ranges``, or None for a stream that did not record them.
        opens: the same with open beams (``scan_open``), or None.
        min_ranges: the candidate ``min_range`` values of ``near`` (empty without it).
        motion: the robot's motion along the run's ground-truth path
            (``detection_truth.json``, a :class:`detection.Motion`), from which the seconds
            of driving are measured, or None (real-log replays and runs recorded before the
            suite wrote it: delays are then elapsed seconds). ``truth`` is its path.
        scan_check: how the stream's scan feature was computed (the
            :data:`~lost_and_found.bench.detectors.SCAN_CHECK_KEYS`; by default the node's
            defaults; a stream file that does not say was computed as
            :data:`~lost_and_found.bench.detectors.LEGACY_SCAN_CHECK`).
        spans: the through span of every reading (``scan_span``, measured as ``scan_check``
            says; None where a reading has none), or None for a stream that did not record it.
        beam_spans: the through spans of every reading at ``scan_check``'s ``min_range``
            without and with the open beams (``scan_spans``; a pair, either None, or None),
            or None for a stream that did not record them.
    """

    path: str
    label: str
    readings: list
    errors: list
    phases: list
    trials: list
    seed: object = None
    command: object = None
    phase_seconds: dict = dataclasses.field(default_factory=lambda: dict(detection.PHASES))
    trials_inferred: bool = False
    scan_check: dict = dataclasses.field(
        default_factory=lambda: detectors.scan_check_of(LostDetectorConfig()))
    splits: object = None
    near: object = None
    min_ranges: tuple = ()
    opens: object = None
    motion: object = None
    spans: object = None
    beam_spans: object = None

    @property
    def truth(self):
        """The ground-truth path ``(t, x, y, yaw)`` as an (n, 4) array, or None."""
        return None if self.motion is None else self.motion.truth

    def weighed(self, short_weight, min_range=None, open_beams=None):
        """This recording with every reading's miss fraction weighed with ``short_weight``,
        measured without the beams shorter than ``min_range`` and with or without the open
        beams (``open_beams``; None for either: as recorded). Each reading then carries its
        through and short fractions too, as a seventh and eighth value (None without a scan
        feature), from which the detector takes its through share, and its through span as a
        ninth (None without one, or where the stream did not record it at that
        ``min_range`` and ``open_beams``: :meth:`spans_at`), for the burst rule.

        Raises:
            CalibrationError: the recording has no split misses and was recorded with
                another short_weight (its misses cannot be weighed again), or did not record
                its misses at that ``min_range`` and ``open_beams``.
        """
        min_range, open_beams = self._measured_at(min_range, open_beams)
        if self.splits is None:
            if short_weight != self.scan_check['short_weight']:
                raise CalibrationError(
                    '%s: its misses were weighed with scan_check/short_weight=%r and not '
                    'recorded by kind: record it again to weigh them with %r'
                    % (self.path, self.scan_check['short_weight'], short_weight))
            return self
        pairs = self.split_pairs(min_range, open_beams)
        spans = self.spans_at(min_range, open_beams)
        readings = [r[:5] + ((None, None, None) if pair is None else
                             (weighted_miss(pair[0], pair[1], short_weight),) + tuple(pair))
                    + (span,) for r, pair, span in zip(
                        self.readings, pairs, spans or [None] * len(self.readings))]
        # Its spans are those of its new measure (a pair only at the recorded min_range).
        return dataclasses.replace(self, readings=readings, scan_check=dict(
            self.scan_check, short_weight=short_weight, min_range=min_range,
            open_beams=open_beams), spans=spans,
            beam_spans=self.beam_spans if min_range == self.scan_check['min_range'] else None)

    def spans_at(self, min_range, open_beams):
        """The through span of every reading measured at ``min_range`` with or without the
        open beams (a list, None where a reading has none), or None when the stream did not
        record it so: the spans were recorded only at the recording's own ``min_range``."""
        source = detectors.span_source(self.scan_check, min_range, open_beams,
                                       self.spans is not None, self.beam_spans is not None)
        if source is None:
            return None
        side = source[1]
        if side is None:
            return self.spans
        return [None if pair is None else pair[side] for pair in self.beam_spans]

    def split_pairs(self, min_range=None, open_beams=None):
        """The ``(through, short)`` miss fractions of every reading (None where it has no scan
        feature), measured without the beams shorter than ``min_range`` and with or without
        the open beams (None for either: as recorded).

        Raises:
            CalibrationError: the recording did not record its misses by kind, or not at that
                ``min_range`` and ``open_beams``.
        """
        min_range, open_beams = self._measured_at(min_range, open_beams)
        if self.splits is None:
            raise CalibrationError('%s: its misses were not recorded by kind: record it again'
                                   % self.path)
        near = (self.opens if open_beams else self.near) or [None] * len(self.splits)
        same_beams = open_beams == self.scan_check['open_beams']
        return [detectors.split_at(split and split[0], split and split[1], n, self.min_ranges,
                                   self.scan_check['min_range'], min_range, same_beams)
                for split, n in zip(self.splits, near)]

    def _measured_at(self, min_range, open_beams):
        """``(min_range, open_beams)`` with None read as the recording's own, after checking
        that its misses were recorded there (CalibrationError if not)."""
        recorded = self.scan_check['min_range']
        min_range = recorded if min_range is None else min_range
        recorded_open = self.scan_check['open_beams']
        open_beams = recorded_open if open_beams is None else open_beams
        pairs_of = self.opens if open_beams else self.near
        if (min_range, open_beams) != (recorded, recorded_open) and \
                (pairs_of is None or min_range not in self.min_ranges):
            raise CalibrationError(
                '%s: its misses were measured with scan_check/min_range=%r, open_beams=%r (and '
                'at min_range %s%s): record it again to measure them at %r, open_beams=%r' % (
                    self.path, recorded, recorded_open,
                    _values(self.min_ranges) if self.min_ranges else 'no other',
                    ' with and without open beams' if self.opens is not None else
                    ' without open beams' if self.near is not None else '',
                    min_range, open_beams))
        return min_range, open_beams

    @property
    def times(self):
        """Reading times (s) as an array."""
        return np.array([r[0] for r in self.readings], dtype=float)

    @property
    def pose_fixes(self):
        """Times of the initial poses the suite published (lost_service resets the detector
        on each)."""
        return detection.pose_fixes(self.trials)

    @property
    def resets(self):
        """Indices of the readings before which the detector is reset."""
        return detectors.reset_indices(self.times, self.pose_fixes)


# ----------------------------------------------------------------------------- loading

def _number(value, what):
    """``value`` as a float; None (JSON null: unknown) becomes inf; NaN and others refused."""
    if value is None:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise CalibrationError('%s=%r: must be a number' % (what, value))
    return float(value)


def parse_stream(data, source='stream'):
    """The readings, errors and phases of a ``detection_stream.json`` document.

    Args:
        data: the parsed JSON (``map``, ``fields``, ``readings``).
        source: a name for error messages.

    Returns:
        ``(label, readings, errors, phases, splits, near, opens)`` as in :class:`Recording`.

    Raises:
        CalibrationError: naming the source and the bad field, row or value.
    """
    if not isinstance(data, dict) or 'readings' not in data:
        raise CalibrationError('%s: not a detection stream (no "readings")' % source)
    fields = tuple(data.get('fields') or ())
    width = len(fields)
    if fields in (SPAN_FIELDS, SPANS_FIELDS):
        fields = FIELDS
    if fields not in (FIELDS, NEAR_FIELDS, SPLIT_FIELDS, MISS_FIELDS, OLD_FIELDS):
        raise CalibrationError('%s: fields %r, expected %r' % (source, list(fields),
                                                               list(FIELDS)))
    readings, errors, phases = [], [], []
    splits = [] if fields in (FIELDS, NEAR_FIELDS, SPLIT_FIELDS) else None
    near = [] if fields in (FIELDS, NEAR_FIELDS) else None
    opens = [] if fields == FIELDS else None
    try:
        min_ranges = detectors.check_min_ranges(data.get('min_ranges'), source) \
            if near is not None else ()
    except ValueError as error:
        raise CalibrationError(str(error)) from None
    last = -math.inf
    for row_index, row in enumerate(data['readings']):
        where = '%s: reading %d' % (source, row_index)
        if not isinstance(row, (list, tuple)) or len(row) != width:
            raise CalibrationError('%s: %r is not %d values' % (where, row, width))
        values = {}
        for name, value in zip(FIELDS[:8], row[:8]):
            values[name] = _number(value, '%s: %s' % (where, name))
            if not math.isfinite(values[name]):
                raise CalibrationError('%s: %s=%r: must be finite' % (where, name, value))
        if values['t'] < last:
            raise CalibrationError('%s: t=%r goes back in time (previous %r)'
                                   % (where, values['t'], last))
        last = values['t']
        error = (_number(row[8], where + ': error_xy'), _number(row[9], where + ': error_yaw'))
        if row[10] not in PHASES:
            raise CalibrationError('%s: phase=%r: must be one of %s'
                                   % (where, row[10], ', '.join(PHASES)))
        miss = _fraction(row, 11, where)
        if splits is not None:
            through, short = _fraction(row, 12, where), _fraction(row, 13, where)
            if (through is None) != (miss is None) or (short is None) != (miss is None):
                raise CalibrationError('%s: scan_miss, scan_through and scan_short must be all '
                                       'null or all numbers, got %r' % (where, row[11:14]))
            splits.append(None if miss is None else (through, short))
        if near is not None:
            try:
                near.append(detectors.near_pairs(row[14], len(min_ranges), where))
                if opens is not None:
                    opens.append(detectors.near_pairs(row[15], len(min_ranges), where,
                                                      'scan_open'))
            except ValueError as error:
                raise CalibrationError(str(error)) from None
        readings.append((values['t'], values['var_x'], values['var_y'], values['cov_xy'],
                         values['var_yaw'], miss))
        errors.append(error)
        phases.append(row[10])
    return str(data.get('map', '')), readings, errors, phases, splits, near, opens


def _fraction(row, index, where):
    """Column ``index`` of a stream row as a fraction in [0, 1], or None (null or absent)."""
    value = row[index] if len(row) > index else None
    if value is None:
        return None
    number = _number(value, '%s: %s' % (where, FIELDS[index]))
    if not 0.0 <= number <= 1.0:
        raise CalibrationError('%s: %s=%r: must be in [0, 1] or null'
                               % (where, FIELDS[index], value))
    return number


def infer_trials(times, phases):
    """Trials recovered from the phases alone (when ``detection.json`` is missing).

    Each run of ``teleport`` or ``bringup`` readings is one event; its time is that of the
    first such reading (so a delay is measured from the first reading after the event, a
    little later than the suite's own clock). The normal stretch before it starts at the first
    ``normal`` reading after the previous event.
    """
    trials = []
    index = 0
    n = len(phases)
    normal_start = None
    while index < n:
        phase = phases[index]
        if phase == 'normal' and normal_start is None:
            normal_start = times[index]
        if phase in ('teleport', 'bringup'):
            end = index
            while end + 1 < n and phases[end + 1] == phase:
                end += 1
            t_event = float(times[index])
            trials.append({'index': len(trials), 'kind': phase, 'distance': None,
                           't_normal': float(normal_start if normal_start is not None
                                             else t_event),
                           't_event': t_event,
                           # The window is half-open: include the last reading.
                           't_end': float(np.nextafter(times[end], math.inf))})
            normal_start = None
            index = end + 1
            continue
        index += 1
    return trials


def _is_span(value):
    """A through span: None or a number >= 0 (m)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and value >= 0)


def stream_spans(data, source):
    """The ``scan_span`` column of a parsed detection stream (a list, None where a reading
    has none), or None when the stream did not record it.

    Raises:
        CalibrationError: naming the source and the row of a span that is not a number >= 0.
    """
    fields = list(data.get('fields') or ())
    if 'scan_span' not in fields:
        return None
    column = fields.index('scan_span')
    spans = [row[column] for row in data['readings']]
    for index, span in enumerate(spans):
        if not _is_span(span):
            raise CalibrationError('%s: reading %d: scan_span=%r: must be a number >= 0 (m) '
                                   'or null' % (source, index, span))
    return spans


def stream_beam_spans(data, source):
    """The ``scan_spans`` column of a parsed detection stream (a list of pairs, without and
    with the open beams, None where a reading has neither), or None when the stream did not
    record it.

    Raises:
        CalibrationError: naming the source and the row of a cell that is not null or two
            spans (each null or a number >= 0).
    """
    fields = list(data.get('fields') or ())
    if 'scan_spans' not in fields:
        return None
    column = fields.index('scan_spans')
    out = []
    for index, cell in enumerate(row[column] for row in data['readings']):
        if cell is not None and not (isinstance(cell, (list, tuple)) and len(cell) == 2
                                     and all(_is_span(v) for v in cell)):
            raise CalibrationError('%s: reading %d: scan_spans=%r: must be null or two spans '
                                   '(null or a number >= 0, m), without and with the open '
                                   'beams' % (source, index, cell))
        out.append(None if cell is None else tuple(cell))
    return out


def _read_json(path):
    try:
        return report.read_json(path)
    except ValueError as error:
        raise CalibrationError(str(error)) from None


def load_recording(path):
    """A :class:`Recording` from a detection-suite output folder (or its stream file).

    ``detection_stream.json`` is required; ``detection.json`` next to it supplies the trials,
    the seed and the command (without it the trials are inferred from the phases), and
    ``detection_truth.json`` the ground-truth path from which seconds of driving are counted
    (without it, elapsed seconds).

    Raises:
        CalibrationError: naming the missing or bad file.
    """
    folder = path if os.path.isdir(path) else os.path.dirname(path) or '.'
    stream_path = os.path.join(path, 'detection_stream.json') if os.path.isdir(path) else path
    if not os.path.isfile(stream_path):
        raise CalibrationError('%s: no detection_stream.json (run `rosrun lost_and_found '
                               'bench detection ... --out %s` first)' % (path, path))
    data = _read_json(stream_path)
    label, readings, errors, phases, splits, near, opens = parse_stream(data, stream_path)
    recording = Recording(path=path, label=label, readings=readings, errors=errors,
                          phases=phases, trials=[], splits=splits, near=near, opens=opens,
                          min_ranges=tuple(float(v) for v in data['min_ranges'])
                          if near is not None else ())
    scan_check = data.get('scan_check', detectors.LEGACY_SCAN_CHECK)
    if isinstance(scan_check, dict):
        scan_check = detectors.recorded_scan_check(scan_check)
    if not isinstance(scan_check, dict) or \
            any(key not in scan_check for key in detectors.SCAN_CHECK_KEYS):
        raise CalibrationError('%s: scan_check=%r: must map %s' % (
            stream_path, scan_check, ', '.join(detectors.SCAN_CHECK_KEYS)))
    recording.scan_check = {key: scan_check[key] for key in detectors.SCAN_CHECK_KEYS}
    recording.spans = stream_spans(data, stream_path)
    recording.beam_spans = stream_beam_spans(data, stream_path)
    result_path = os.path.join(folder, 'detection.json')
    if os.path.isfile(result_path):
        result = _read_json(result_path)
        trials = result.get('trials')
        if not isinstance(trials, list):
            raise CalibrationError('%s: no "trials" list' % result_path)
        keys = ('index', 'kind', 'distance', 't_normal', 't_event', 't_end')
        for trial in trials:
            missing = [k for k in keys if k not in trial]
            if missing:
                raise CalibrationError('%s: a trial lacks %s' % (result_path,
                                                                 ', '.join(missing)))
        # pose_fixes: recordings made before the suite recorded them have none (no resets).
        recording.trials = [dict({k: trial[k] for k in keys},
                                 pose_fixes=list(trial.get('pose_fixes', ())))
                            for trial in trials]
        recording.seed = result.get('seed')
        recording.command = result.get('command')
        phase_seconds = (result.get('summary') or {}).get('phases')
        if isinstance(phase_seconds, dict) and 'settle' in phase_seconds:
            recording.phase_seconds = dict(phase_seconds)
    else:
        recording.trials = infer_trials(recording.times, phases)
        recording.trials_inferred = True
    if os.path.isfile(os.path.join(folder, detection.TRUTH_FILE)):
        truth = _truth(folder)
        recording.motion = None if truth is None else detection.Motion(truth)
    return recording


def _truth(folder):
    """The ground-truth path of a run (``detection_truth.json``) as an (n, 4) array of
    ``t, x, y, yaw``, or None when the file holds none.

    Raises:
        CalibrationError: naming the file, when it is not JSON or its rows are not four finite
            numbers in time order.
    """
    try:
        rows = detection.read_truth(folder)      # its errors name the file
    except ValueError as error:
        raise CalibrationError(str(error)) from None
    if not rows:
        return None
    bad = CalibrationError('%s: the truth must be rows of four finite numbers t, x, y, yaw in '
                           'time order' % os.path.join(folder, detection.TRUTH_FILE))
    try:
        truth = np.array(rows, dtype=float)
    except (ValueError, TypeError):
        raise bad from None
    if truth.ndim != 2 or truth.shape[1] != 4 or not np.all(np.isfinite(truth)) or \
            np.any(np.diff(truth[:, 0]) < 0.0):
        raise bad
    return truth


def load_real_log_recordings(folder, log, profile):
    """One Carmen log's replays with one localizer profile, from a ``bench real-logs`` run, as
    :class:`Recording` objects: the data for a detector fitted to that robot and its localizer.

    ``folder`` holds the run's ``real_logs_stream.json`` (every replay's readings) and
    ``real_logs.json`` (its seed and command). The unmodified replay is normal driving from
    :data:`~lost_and_found.bench.real_logs.SETTLE` s on (one trial without an event; its first
    seconds are the settle); each spliced copy is one silent delocalization at its splice (the
    odometry jumped), its warm-up likewise a settle, then normal driving until the splice, and
    the splice is scored as the suite scores it (:func:`score_recording`). Readings are
    labelled as in the simulator's training runs (:func:`label_readings`): the localizer's own
    wrong estimates on the unmodified log are lost readings too.

    Raises:
        CalibrationError: a missing or bad file, no replay of ``log`` with ``profile``, or a
            run recorded before the suite wrote its spliced copies.
    """
    from lost_and_found.bench import real_logs
    stream_path = os.path.join(folder, 'real_logs_stream.json')
    for path in (stream_path, os.path.join(folder, 'real_logs.json')):
        if not os.path.isfile(path):
            raise CalibrationError('%s: missing (run `rosrun lost_and_found bench real-logs '
                                   '--out %s` first)' % (path, folder))
    data = _read_json(stream_path)
    run = _read_json(os.path.join(folder, 'real_logs.json'))
    streams = data.get('streams') if isinstance(data, dict) else None
    if not isinstance(streams, list):
        raise CalibrationError('%s: no "streams" list' % stream_path)
    chosen = [st for st in streams if st.get('log') == log and st.get('profile') == profile]
    if not chosen:
        raise CalibrationError('%s: no replay of log %r with localizer profile %r (it has %s)'
                               % (stream_path, log, profile, ', '.join(sorted(
                                   '%s/%s' % (st.get('log'), st.get('profile'))
                                   for st in streams)) or 'none'))
    kinds = [st.get('kind') for st in chosen]
    if 'spliced' not in kinds or 'unmodified' not in kinds:
        raise CalibrationError('%s: log %r (%s) has %s: fitting needs the unmodified replay '
                               'and spliced copies (files written before 2026-11-27 hold '
                               'only the unmodified replays: run the suite again)' % (
                                   stream_path, log, profile,
                                   ', '.join(str(k) for k in kinds)))
    scan_check = detectors.recorded_scan_check(data.get('scan_check'))
    recordings = []
    for index, stream in enumerate(chosen):
        source = '%s: %s %s (%s) #%d' % (stream_path, log, stream['kind'], profile, index)
        try:
            field = {name: i for i, name in enumerate(stream['fields'])}
            columns = [field[name] for name in FIELDS if name != 'phase']
            start, end = float(stream['start']), float(stream['end'])
            spliced = stream['kind'] == 'spliced'
            t_event = float(stream['t_splice']) if spliced else None
            rows = []
            for row in stream['readings']:
                values = [row[i] for i in columns]
                t = values[0]
                if spliced and t >= t_event:
                    phase = 'teleport'
                else:
                    phase = 'normal' if t >= start + real_logs.SETTLE else 'settle'
                rows.append(values[:10] + [phase] + values[10:])
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise CalibrationError('%s: not a real-logs stream with splices (%s: %s)' % (
                source, type(error).__name__, error)) from None
        label, readings, errors, phases, splits, near, opens = parse_stream(
            {'map': log, 'fields': list(FIELDS), 'readings': rows,
             'min_ranges': data.get('min_ranges')}, source)
        last = readings[-1][0] if readings else end
        if spliced:
            # Its warm-up after the settle is normal driving too (false alarms count there);
            # the splice is scored as the suite scores it (``splice``: score_recording).
            trial = {'kind': 'teleport', 'distance': stream.get('distance'),
                     't_normal': min(start + real_logs.SETTLE, t_event), 't_event': t_event,
                     't_end': t_event + real_logs.WITHIN, 'splice': True}
        else:
            # No event: the whole scored stretch is normal driving, nothing after it.
            t_end = float(np.nextafter(max(last, end), math.inf))
            trial = {'kind': 'unmodified', 'distance': None,
                     't_normal': start + real_logs.SETTLE, 't_event': t_end, 't_end': t_end}
        recordings.append(Recording(
            path=source, label=label, readings=readings, errors=errors, phases=phases,
            trials=[dict(trial, index=0, pose_fixes=[])], seed=run.get('seed'),
            command=run.get('command'), scan_check={k: scan_check[k]
                                                    for k in detectors.SCAN_CHECK_KEYS},
            splits=splits, near=near, opens=opens,
            min_ranges=tuple(float(v) for v in data['min_ranges'])))
    return recordings


def check_training(recording):
    """Refuse a recording that is not training data (held-out map or seed, unknown seed).

    Raises:
        CalibrationError: naming the recording, its map and its seed.
    """
    if recording.label not in TRAINING_MAPS:
        raise CalibrationError(
            '%s: map %r is held out for evaluation; fit only on %s' % (
                recording.path, recording.label, ', '.join(TRAINING_MAPS)))
    seed = recording.seed
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < MIN_TRAINING_SEED:
        raise CalibrationError(
            '%s: seed %r is held out for evaluation (or unknown: detection.json missing); '
            'fit only on seeds >= %d' % (recording.path, seed, MIN_TRAINING_SEED))


# ----------------------------------------------------------------------------- labels, fit

def label_readings(errors, phases):
    """The class of every reading: :data:`NORMAL`, :data:`LOST` or :data:`AMBIGUOUS`.

    Normal: the estimate is right (within detectors.FOUND_XY m and FOUND_YAW rad) in a phase of
    :data:`NORMAL_PHASES`. Lost: the estimate is wrong (beyond detectors.LOST_XY m or LOST_YAW
    rad) in any phase. Everything else (the gap between the two thresholds, a right estimate
    right after an event, an unknown error) is ambiguous and left out of the fit.
    """
    labels = []
    for (error_xy, error_yaw), phase in zip(errors, phases):
        if not (math.isfinite(error_xy) and math.isfinite(error_yaw)):
            labels.append(AMBIGUOUS)
        elif error_xy > detectors.LOST_XY or error_yaw > detectors.LOST_YAW:
            labels.append(LOST)
        elif error_xy <= detectors.FOUND_XY and error_yaw <= detectors.FOUND_YAW and \
                phase in NORMAL_PHASES:
            labels.append(NORMAL)
        else:
            labels.append(AMBIGUOUS)
    return np.array(labels, dtype=int)


def reading_features(readings):
    """The node's features of every reading, as an (N, 5) array.

    Columns: the two covariance features, computed exactly as the node does
    (:func:`covariance_features` of the 36-covariance built by :func:`detectors.covariance_of`),
    NaN for a covariance the node would refuse; the scan miss fraction, NaN when the reading
    has none; the through and short miss fractions of its scan (a reading's seventh and eighth
    values, :meth:`Recording.weighed`), NaN when it has none (the detector's through share
    comes from them).
    """
    out = np.full((len(readings), 5), np.nan)
    for i, reading in enumerate(readings):
        try:
            out[i, :2] = covariance_features(detectors.covariance_of(reading))
        except ValueError:
            pass
        if len(reading) > 5 and reading[5] is not None:
            out[i, 2] = reading[5]
        if len(reading) > 7 and reading[6] is not None and reading[7] is not None:
            out[i, 3:5] = reading[6:8]
    return out


def round_sig(value, digits=DIGITS):
    """``value`` rounded to ``digits`` significant digits."""
    return float('%.*g' % (digits, value))


@dataclasses.dataclass(frozen=True)
class ClassifierFit:
    """The fitted classifier, rounded as it is written to the YAML.

    Attributes:
        slice_mu: class means (xy-normal [m], yaw-normal [rad], xy-lost [m], yaw-lost [rad]).
        slice_sigma: class standard deviations, same order.
        tier0_normal_prior: the normal class's share of the labelled readings.
        n_normal: normal readings fitted on.
        n_lost: lost readings fitted on.
        n_dropped: readings left out (ambiguous, or a covariance the node refuses).
        scan_miss_mu: class means of the scan miss fraction [normal, lost], or None when
            the training readings have too few scans of a class to fit it.
        scan_miss_sigma: their standard deviations, or None.
        n_scan: (normal, lost) readings the scan feature was fitted on.
        scan_check: how the fitted scan feature was computed (the training streams' own
            numbers, :data:`~lost_and_found.bench.detectors.SCAN_CHECK_KEYS`; None: the
            node's defaults).
    """

    slice_mu: tuple
    slice_sigma: tuple
    tier0_normal_prior: float
    n_normal: int
    n_lost: int
    n_dropped: int
    scan_miss_mu: object = None
    scan_miss_sigma: object = None
    n_scan: tuple = (0, 0)
    scan_check: object = None


def fit_classifier(features, labels):
    """Fit GaussianNB on the labelled readings (ambiguous and NaN rows dropped).

    Args:
        features: (N, 2) array of (sigma_xy, sigma_theta), or (N, 3) with the scan miss
            fraction (NaN where a reading has none).
        labels: N labels from :func:`label_readings`.

    Returns:
        A :class:`ClassifierFit` (numbers rounded to :data:`DIGITS` significant digits).

    Raises:
        CalibrationError: when a class has fewer than two readings.
    """
    features = np.asarray(features, dtype=float)
    features = features.reshape(len(features), -1) if features.size else \
        features.reshape(0, 2)
    labels = np.asarray(labels, dtype=int)
    keep = (labels != AMBIGUOUS) & np.all(np.isfinite(features[:, :2]), axis=1)
    x, y = features[keep, :2], labels[keep]
    counts = {c: int(np.sum(y == c)) for c in (NORMAL, LOST)}
    if min(counts.values()) < 2:
        raise CalibrationError('need at least 2 readings of each class, got %d normal and %d '
                               'lost' % (counts[NORMAL], counts[LOST]))
    gnb = GaussianNB().fit(x, y)
    order = [list(gnb.classes_).index(c) for c in (NORMAL, LOST)]
    mu = [round_sig(v) for c in order for v in gnb.theta_[c]]
    sigma = [round_sig(math.sqrt(v)) for c in order for v in classifier_variances(gnb)[c]]
    prior = round_sig(float(gnb.class_prior_[order[0]]), 3)
    # A class prior of exactly 0 or 1 after rounding is outside (0, 1): keep it inside.
    prior = min(max(prior, 0.001), 0.999)
    scan_mu = scan_sigma = None
    n_scan = (0, 0)
    if features.shape[1] > 2:
        with_scan = keep & np.isfinite(features[:, 2])
        miss, miss_labels = features[with_scan, 2], labels[with_scan]
        n_scan = tuple(int(np.sum(miss_labels == c)) for c in (NORMAL, LOST))
        if min(n_scan) >= 2:
            scan_gnb = GaussianNB().fit(miss.reshape(-1, 1), miss_labels)
            rows = [list(scan_gnb.classes_).index(c) for c in (NORMAL, LOST)]
            scan_mu = tuple(round_sig(float(scan_gnb.theta_[r][0])) for r in rows)
            # Floor the spread: a class whose training misses are all 0 would otherwise get a
            # vanishing variance and call any miss at all lost.
            scan_sigma = tuple(round_sig(max(math.sqrt(float(classifier_variances(scan_gnb)[r][0])),
                                             MIN_SCAN_SIGMA)) for r in rows)
    return ClassifierFit(tuple(mu), tuple(sigma), prior, counts[NORMAL], counts[LOST],
                         int(len(labels) - np.sum(keep)), scan_mu, scan_sigma, n_scan)


def make_config(fit, params):
    """A validated LostDetectorConfig from a fit and the grid's parameters.

    Without a scan fit the classifier's scan numbers keep the node's defaults; the scan
    check's geometry is the one the training streams were recorded with.
    """
    scan = {} if fit.scan_miss_mu is None else {
        'scan_miss_mu': tuple(fit.scan_miss_mu), 'scan_miss_sigma': tuple(fit.scan_miss_sigma)}
    scan.update(fit.scan_check or {})
    config = LostDetectorConfig(
        **scan, tier0_normal_prior=fit.tier0_normal_prior, prob_thresh=float(params['prob_thresh']),
        slice_mu=tuple(fit.slice_mu), slice_sigma=tuple(fit.slice_sigma),
        queue_min=int(params['queue_min']),
        window_meta_tier2_lost=int(params['window_meta_tier2_lost']),
        ratio_thresh_detections_tier2_lost=float(params['ratio_thresh_detections_tier2_lost']),
        window_meta_tier0_normal=int(params['window_meta_tier0_normal']),
        settle_readings=int(params.get('settle_readings', 0)),
        through_lost=float(params.get('through_lost', 1.0)))
    config.validate()
    return config


# ----------------------------------------------------------------------------- replay, score

def reading_probabilities(features, config):
    """``(P(lost), scanned, P(lost | scan), through share)`` of every reading under
    ``config`` (None for a refused reading).

    Computed one reading at a time with :meth:`LostDetector.probability_lost`, the node's own
    code path; ``scanned`` says whether the reading had the scan feature (which the detector's
    rule 0 needs); the third value is the scan-only P(lost) a settling detector uses (None
    without a scan); the fourth the scan's through share
    (:func:`~lost_and_found.core.scan_agreement.through_share` with the config's
    ``through_min_reach``; None without one, or for features without the split columns). It
    depends only on the classifier, so the grid search computes it once.
    """
    detector = LostDetector(config)
    out = []
    features = np.asarray(features, dtype=float)
    for row in features.reshape(len(features), -1) if features.size else []:
        if not np.all(np.isfinite(row[:2])):
            out.append(None)
            continue
        miss = float(row[2]) if len(row) > 2 and np.isfinite(row[2]) and config.scan_check \
            else None
        through = through_share(float(row[3]), float(row[4]), config.through_min_reach) \
            if miss is not None and len(row) > 4 and np.all(np.isfinite(row[3:5])) else None
        out.append((detector.probability_lost((row[0], row[1], miss)), miss is not None,
                    None if miss is None else detector.probability_lost_scan(miss), through))
    return out


def replay_tiers(probabilities, config, resets=frozenset(), spans=None):
    """The detector's tier for every reading, replayed in order from :func:`reading_probabilities`.

    Equal to :func:`detectors.lost_detector_tiers` on the same readings (a refused reading,
    None here, keeps the previous tier as the node does): the tier rules are the detector's own
    (:meth:`LostDetector.add`). ``resets``: indices of the readings before which the detector
    is reset (:attr:`Recording.resets`); ``spans``: the through span of every reading (None
    where it has none, or None for all), which only the detector's burst rule reads.
    """
    detector = LostDetector(config)
    tiers = []
    for index, reading in enumerate(probabilities):
        if index in resets:
            detector.reset()
        if reading is None:
            tiers.append(int(detector.tier))
        else:
            probability, scanned, scan_only = reading[:3]
            through = reading[3] if len(reading) > 3 else None
            span = spans[index] if spans is not None else None
            tiers.append(int(detector.add(scan_only if detector.settling else probability,
                                          scanned, detector.through_says_lost(through),
                                          detector.burst_says(through, span))))
    return tiers


class _RecordedStream:
    """What detection.score_trial reads of a stream, rebuilt from a recording.

    Metres and seconds driven come from the recording's ground-truth path; without one they
    are unknown (NaN).
    """

    def __init__(self, recording):
        self.times = recording.times
        self.errors = recording.errors
        self._motion = recording.motion

    def window(self, start, end):
        return detection.reading_window(self.times, start, end)

    def driven(self, t0, t1):
        return self._motion.driven(t0, t1) if self._motion else math.nan

    def driving_seconds(self, t0, t1):
        return self._motion.driving_seconds(t0, t1) if self._motion else math.nan


def score_recording(recording, tiers):
    """Every trial of a recording scored by the suite's own :func:`detection.score_trial`.

    Returns:
        The scored trials (``delocalized``, ``self_corrected_at``, and under
        ``detectors['lost_detector']`` the false alarms, delay, ...).
    """
    stream = _RecordedStream(recording)
    scored = []
    for trial in recording.trials:
        out = detection.score_trial(trial, stream, {'lost_detector': tiers},
                                    recording.phase_seconds)
        if trial.get('splice'):
            _score_as_splice(out, recording, tiers, trial)
        scored.append(out)
    return scored


def _score_as_splice(out, recording, tiers, trial):
    """A real log's spliced kidnap, scored as the real-logs suite scores it
    (:func:`real_logs.score_splice`): delocalized when the first reading after the splice is
    off, however late it comes (a scan every few seconds; the simulator's onset is 5 s); one
    that finds the detector in tier 2 already is not counted as an event."""
    from lost_and_found.bench import real_logs
    splice = real_logs.score_splice(list(recording.times), tiers, recording.errors,
                                    trial['t_event'], trial['t_end'] - trial['t_event'],
                                    (np.zeros(0), np.zeros(0)))
    out['delocalized'] = splice['delocalized'] and not splice['alarmed_before']
    out['detectors']['lost_detector']['delay_s'] = splice['delay_s'] if out['delocalized'] \
        else None


def target_delay(scores):
    """A detection's delay in the measure the target is stated in: seconds of driving where
    the recording knows them (its ground-truth path), else seconds elapsed (None: missed)."""
    driving = scores.get('delay_driving_s')
    if driving is None or not math.isfinite(driving):
        return scores['delay_s']
    return driving


def summarize_scores(scored, normal_seconds, measure='elapsed'):
    """Pooled figures of scored trials (see :func:`score_recordings`); ``measure`` says what
    the delays of ``within`` count (``driving``, ``elapsed`` or ``mixed``)."""
    out = {'trials': len(scored), 'normal_hours': normal_seconds / 3600.0,
           'reseeds': sum(1 for t in scored if t.get('pose_fixes')), 'measure': measure}
    per = [t['detectors']['lost_detector'] for t in scored]
    out['false_alarms'] = sum(s['false_alarms'] for s in per)
    out['settle_false_alarms'] = sum(s['settle_false_alarms'] for s in per)
    out['alarm_after_reseed'] = sum(1 for s in per if s['alarm_after_reseed'])
    out['tier1_normal'] = sum(s['tier1_readings_normal'] for s in per)
    out['readings_normal'] = sum(t['readings_normal'] for t in scored)
    groups = {
        'delocalized': lambda t: True,
        'silent_ge2m': lambda t: t['kind'] == 'teleport' and t['distance'] is not None
        and t['distance'] >= detection.HEADLINE_DISTANCE,
        'silent_all': lambda t: t['kind'] == 'teleport',
        'bringup': lambda t: t['kind'] == 'bringup',
    }
    for name, keep in groups.items():
        chosen = [t['detectors']['lost_detector'] for t in scored
                  if t['delocalized'] and keep(t)]
        delays = [s['delay_s'] for s in chosen]
        targets = [target_delay(s) for s in chosen]
        within = [d for d in targets if d is not None and d <= detection.WITHIN]
        out[name] = {'events': len(chosen),
                     'detected': sum(1 for d in delays if d is not None),
                     'within': len(within),
                     'within_rate': report.rate(len(within), len(chosen)),
                     'within_elapsed': sum(1 for d in delays
                                           if d is not None and d <= detection.WITHIN),
                     'mean_delay_within': float(np.mean(within)) if within else None,
                     'delay_s': report.stats(delays)}
    return out


def score_recordings(recordings, tiers_per_recording):
    """Pooled scores of one detector configuration over several recordings.

    Args:
        recordings: the :class:`Recording` objects.
        tiers_per_recording: the tier of every reading, one list per recording.

    Returns:
        A dict: ``false_alarms`` (entries into tier 2 during normal driving while the estimate
        was right), ``alarm_after_reseed``, ``tier1_normal``, ``readings_normal``,
        ``normal_hours``, and per group (``delocalized`` = every delocalized event,
        ``silent_ge2m``, ``silent_all``, ``bringup``) ``events``, ``detected`` (tier 2 before
        the localizer corrected itself), ``within`` (and ``within_rate``: within
        detection.WITHIN s of driving, the target's measure, where the recordings have their
        ground-truth path, else elapsed; ``measure`` says which), ``within_elapsed``,
        ``mean_delay_within`` (in the same measure) and ``delay_s`` (elapsed) statistics.
    """
    scored = []
    seconds = 0.0
    for recording, tiers in zip(recordings, tiers_per_recording):
        scored += score_recording(recording, tiers)
        seconds += sum(t['t_event'] - t['t_normal'] for t in recording.trials)
    known = [r.motion is not None for r in recordings]
    measure = 'driving' if all(known) else 'elapsed' if not any(known) else 'mixed'
    return summarize_scores(scored, seconds, measure)


def all_false_alarms(score):
    """False tier-2 alarms of a score: during normal driving and while settling after a
    correct re-seed (an rviz initial pose the person got right)."""
    return score['false_alarms'] + score.get('settle_false_alarms', 0)


def objective(score):
    """The grid search's sort key (smaller is better).

    No false tier-2 alarm first (:func:`all_false_alarms`), then the most delocalizations
    detected within detection.WITHIN s (of driving where the recordings know it: the score's
    ``measure``), then the shortest mean delay of those, then the fewest tier-1 readings
    during normal driving.
    """
    delay = score['delocalized']['mean_delay_within']
    return (all_false_alarms(score), -score['delocalized']['within'],
            round(delay, 6) if delay is not None else math.inf, score['tier1_normal'])


def _caution(params):
    """Among equal scores prefer the most cautious parameters (longer windows, higher bars,
    the through share off or highest), then the shortest settle time (the covariance ignored
    for as few readings as will do)."""
    return (-params['window_meta_tier2_lost'], -params['queue_min'],
            -params['window_meta_tier0_normal'], -params['prob_thresh'],
            -params['ratio_thresh_detections_tier2_lost'], -params.get('through_lost', 1.0),
            params.get('settle_readings', 0))


@dataclasses.dataclass
class SearchResult:
    """The grid search's outcome.

    Attributes:
        params: the chosen parameters.
        score: their training score (:func:`score_recordings`).
        config: the full validated config.
        tried: how many combinations were replayed.
        ties: how many combinations scored exactly as well.
        zero_false_alarms: how many combinations had no false tier-2 alarm.
        grid: the :class:`Grid` searched.
        frontier: the trade-off the grid offers: ``(false_alarms, within, silent_ge2m_within,
            params)`` for every false-alarm count that buys more detections within
            detection.WITHIN s than any smaller count (best params of each count).
        margin: how close the choice is to a false alarm: for ``prob_thresh`` and
            ``ratio_thresh_detections_tier2_lost``, ``(next lower grid value, false alarms
            with it and the other parameters unchanged)`` (absent at the grid's low end).
    """

    params: dict
    score: dict
    config: LostDetectorConfig
    tried: int
    ties: int
    zero_false_alarms: int
    grid: Grid
    frontier: list
    margin: dict


def grid_search(recordings, fit, grid=None, features=None):
    """Choose prob_thresh and the windows by replaying the detector over the training streams.

    Args:
        recordings: training :class:`Recording` objects (each replayed by its own detector,
            in order: the tiers depend on it).
        fit: the :class:`ClassifierFit` (its prior is kept: it and prob_thresh move the same
            decision boundary, so only the threshold is searched).
        grid: a :class:`Grid` (default: the standard one).
        features: precomputed :func:`reading_features` per recording (optional).

    Returns:
        A :class:`SearchResult`.
    """
    grid = grid or Grid()
    short = [w for w in grid.window_meta_tier2_lost + grid.window_meta_tier0_normal
             if w < MIN_WINDOW]
    if short:
        raise CalibrationError('grid windows %s: must be >= %d readings (shorter ones fit '
                               'single readings)' % (short, MIN_WINDOW))
    if features is None:
        features = [reading_features(r.readings) for r in recordings]
    resets = [r.resets for r in recordings]
    probabilities = None
    best = None
    tried = zero = 0
    ranked = []
    per_count = {}
    alarms = {}
    for params in grid.combinations():
        config = make_config(fit, params)
        if probabilities is None:   # the fit's classifier: the same for every combination
            probabilities = [reading_probabilities(f, config) for f in features]
        tiers = [replay_tiers(p, config, r) for p, r in zip(probabilities, resets)]
        score = score_recordings(recordings, tiers)
        tried += 1
        zero += all_false_alarms(score) == 0
        rank = (objective(score), _caution(params))
        ranked.append(objective(score))
        if best is None or rank < best[0]:
            best = (rank, params, score, config)
        count = all_false_alarms(score)
        alarms[_key(params)] = count
        if count not in per_count or rank < per_count[count][0]:
            per_count[count] = (rank, params, score)
    if best is None:
        raise CalibrationError('the grid has no valid combination')
    ties = sum(1 for key in ranked if key == best[0][0])
    frontier = []
    for count in sorted(per_count):
        _, params, score = per_count[count]
        within = score['delocalized']['within']
        if not frontier or within > frontier[-1][1]:
            frontier.append((count, within, score['silent_ge2m']['within'], params))
    margin = {}
    for name in ('prob_thresh', 'ratio_thresh_detections_tier2_lost', 'through_lost'):
        values = sorted(getattr(grid, name))
        index = values.index(best[1][name])
        if index > 0:
            lower = dict(best[1], **{name: values[index - 1]})
            margin[name] = (values[index - 1], alarms.get(_key(lower)))
    return SearchResult(params=best[1], score=best[2], config=best[3], tried=tried, ties=ties,
                        zero_false_alarms=zero, grid=grid, frontier=frontier, margin=margin)


def _key(params):
    return tuple(sorted(params.items()))


def classifier_quality(features, labels, config):
    """Per-reading quality of the classifier alone: share of each class labelled lost."""
    probabilities = reading_probabilities(features, config)
    out = {}
    for name, cls in (('normal', NORMAL), ('lost', LOST)):
        chosen = [r[0] for r, c in zip(probabilities, labels) if c == cls and r is not None]
        flagged = sum(1 for p in chosen if p > config.prob_thresh)
        out[name] = {'readings': len(chosen), 'labelled_lost': flagged,
                     'rate': report.rate(flagged, len(chosen))}
    return out


# ----------------------------------------------------------------------------- calibrate

@dataclasses.dataclass
class Calibration:
    """Everything the YAML says: inputs, fit, search and scores.

    Attributes:
        recordings: the training recordings (weighed with the chosen short_weight and
            min_range).
        fit: the :class:`ClassifierFit`.
        search: the :class:`SearchResult`.
        quality: :func:`classifier_quality` on the training readings.
        labels: label counts (normal, lost, ambiguous) over all training readings.
        weights: ``[(short_weight, training score of its best combination)]`` for every
            short_weight tried at the chosen min_range, in order (one entry when the streams
            could not be weighed again).
        ranges: ``[(min_range, short_weight, training score)]``: the best short_weight and
            its score at every min_range tried with the chosen open_beams, in order (one
            entry when the streams did not record their misses at other min_ranges).
        opens: ``[(open_beams, min_range, short_weight, training score)]``: the best
            combination with each open_beams tried, in order (one entry when the streams did
            not record their misses both ways).
    """

    recordings: list
    fit: ClassifierFit
    search: SearchResult
    quality: dict
    labels: dict
    weights: list = dataclasses.field(default_factory=list)
    ranges: list = dataclasses.field(default_factory=list)
    opens: list = dataclasses.field(default_factory=list)


#: What the worker processes of :func:`calibrate` read (set before they fork).
_CANDIDATE_INPUTS = {}


def _fit_candidate(candidate):
    """Fit and grid-search one ``(open_beams, min_range, short_weight)`` of :func:`calibrate`."""
    recordings, labels, grid = _CANDIDATE_INPUTS['inputs']
    open_beams, min_range, short_weight = candidate
    weighed = [r.weighed(short_weight, min_range, open_beams) for r in recordings]
    features = [reading_features(r.readings) for r in weighed]
    fit = dataclasses.replace(fit_classifier(np.vstack(features), labels),
                              scan_check=dict(weighed[0].scan_check))
    return fit, grid_search(weighed, fit, grid, features)


def _fit_candidates(candidates, recordings, labels, grid, jobs, progress=None):
    """:func:`_fit_candidate` of every candidate, in order, in ``jobs`` processes.

    ``progress(done, total, candidate, search)``, when given, is called in this process as
    each result arrives (in the candidates' order)."""
    _CANDIDATE_INPUTS['inputs'] = (recordings, labels, grid)
    try:
        if jobs <= 1 or len(candidates) <= 1:
            results = (_fit_candidate(c) for c in candidates)
            return _reported(results, candidates, progress)
        import multiprocessing
        with multiprocessing.get_context('fork').Pool(min(jobs, len(candidates))) as pool:
            return _reported(pool.imap(_fit_candidate, candidates, chunksize=1), candidates,
                             progress)
    finally:
        _CANDIDATE_INPUTS.clear()


def _reported(results, candidates, progress):
    """The list of ``results``, ``progress`` called after each one."""
    done = []
    for candidate, result in zip(candidates, results):
        done.append(result)
        if progress is not None:
            progress(len(done), len(candidates), candidate, result[1])
    return done


def calibrate(recordings, grid=None, short_weights=SHORT_WEIGHTS, min_ranges=MIN_RANGES,
              open_beams=OPEN_BEAMS, jobs=1, held_out_check=True, progress=None):
    """Fit the classifier and search the windows on training recordings.

    When every training stream recorded its misses by kind, each of ``short_weights`` is
    tried (fit and grid search on the misses weighed with it) and the best training score
    wins (:func:`objective`; on a tie the smaller weight, the one less fooled by clutter);
    otherwise the weight the streams were recorded with is kept. Likewise every one of
    ``min_ranges`` that all the streams recorded their misses at (on a tie the smaller one,
    which uses more beams), otherwise the streams' own min_range; and each of ``open_beams``
    that all the streams recorded (on a tie without them, the node's default), otherwise the
    streams' own. ``jobs`` processes fit the candidates side by side (the result does not
    depend on it). ``held_out_check`` False skips :func:`check_training`: for a robot's own
    logs (:func:`load_real_log_recordings`), where what is held out is the robot's other logs.
    ``progress(done, total, (open_beams, min_range, short_weight), search)`` is called as each
    candidate's grid search ends (a fit over days of recordings takes tens of minutes).

    Raises:
        CalibrationError: for held-out recordings or too little data.
    """
    if not recordings:
        raise CalibrationError('no training recordings')
    for recording in recordings if held_out_check else ():
        check_training(recording)
    chosen_keys = ('short_weight', 'min_range', 'open_beams')
    geometry = {tuple(sorted((k, v) for k, v in r.scan_check.items() if k not in chosen_keys))
                for r in recordings}
    own = {(r.scan_check['open_beams'], r.scan_check['min_range']) for r in recordings}
    # Streams without the two kinds of misses can only be scored with their own weight.
    fixed = {r.scan_check['short_weight'] for r in recordings if r.splits is None}
    if len(geometry) > 1 or len(fixed) > 1:
        raise CalibrationError('the training runs computed their scan feature differently (%s): '
                               'record them all with one lost_detector config' % '; '.join(
                                   '%s: %s' % (r.path, r.scan_check) for r in recordings))
    if fixed:
        short_weights = tuple(fixed)
    variants = [(o, m) for o in sorted(set(open_beams)) for m in sorted(min_ranges)
                if all((r.opens if o else r.near) is not None and m in r.min_ranges
                       for r in recordings)]
    if len(own) == 1 and not variants:
        variants = list(own)
    elif not variants:
        raise CalibrationError('the training runs measured their misses with different '
                               'scan_check/min_range and open_beams values (%s) and not with a '
                               'common one: record them again' % _values(sorted(own)))
    labels = [label_readings(r.errors, r.phases) for r in recordings]
    all_labels = np.concatenate(labels)
    candidates = [(o, m, w) for o, m in variants for w in short_weights]
    results = iter(_fit_candidates(candidates, recordings, all_labels, grid, jobs, progress))
    best, per_variant = None, {}
    for variant in variants:
        tried, best_here = [], None
        for short_weight in short_weights:
            fit, search = next(results)
            tried.append((short_weight, search.score))
            if best_here is None or objective(search.score) < objective(best_here[1].score):
                best_here = (fit, search, tried)
        per_variant[variant] = best_here
        if best is None or objective(best_here[1].score) < objective(best[1].score):
            best = best_here
    fit, search, tried = best
    chosen_open = fit.scan_check['open_beams']
    per_range = [(m, b[0].scan_check['short_weight'], b[1].score)
                 for (o, m), b in per_variant.items() if o == chosen_open]
    per_open = []
    for o in sorted({o for o, _ in variants}):
        here = min((b for (v, _), b in per_variant.items() if v == o),
                   key=lambda b: objective(b[1].score))
        per_open.append((o, here[0].scan_check['min_range'], here[0].scan_check['short_weight'],
                         here[1].score))
    weighed = [r.weighed(fit.scan_check['short_weight'], fit.scan_check['min_range'],
                         chosen_open) for r in recordings]
    all_features = np.vstack([reading_features(r.readings) for r in weighed])
    quality = classifier_quality(all_features, all_labels, search.config)
    counts = {'normal': int(np.sum(all_labels == NORMAL)), 'lost': int(np.sum(all_labels == LOST)),
              'ambiguous': int(np.sum(all_labels == AMBIGUOUS))}
    return Calibration(weighed, fit, search, quality, counts, tried, per_range, per_open)


def choose_through_lost(recordings, base, values):
    """Search only ``scan_check/through_lost`` over ``values``, keeping everything else of the
    ``base`` config (its fit, windows and scan check), on training recordings.

    Each value is replayed as the node runs (:func:`evaluate`) and the best by
    :func:`objective` wins; on a tie the highest value (the most cautious; 1 is off).

    Returns:
        ``(chosen config, [(value, score), ...] in the order of values)``.

    Raises:
        CalibrationError: no values, a value outside (0, 1], or recordings whose scan feature
            was computed otherwise than ``base`` computes it.
    """
    if not values:
        raise CalibrationError('no through_lost values to try')
    bad = [v for v in values if not 0.0 < v <= 1.0]
    if bad:
        raise CalibrationError('through_lost %s: must be in (0, 1]' % _values(bad))
    unsplit = [r.path for r in recordings if r.splits is None]
    if unsplit and any(v < 1.0 for v in values):
        raise CalibrationError('%s: misses not recorded by kind, so no through share to score '
                               'through_lost on: record them again' % ', '.join(unsplit))
    scores = [(v, evaluate(recordings, dataclasses.replace(base, through_lost=float(v))))
              for v in values]
    value, _ = min(scores, key=lambda vs: (objective(vs[1]), -vs[0]))
    return dataclasses.replace(base, through_lost=float(value)), scores


#: The lines :func:`render_keep_fit` writes above and into a base YAML: its header and the
#: through share's keys (replaced when the base has them, so that a rerun gives the same bytes).
KEEP_FIT_MARK = '# scan_check/through_lost chosen by tools/calibrate_detector.py --keep-fit'
#: How the header of a file the full calibration writes begins.
GENERATED_MARK = '# lost_detector parameters, GENERATED by tools/calibrate_detector.py'
_THROUGH_BLOCK = re.compile(r'(?:^  #[^\n]*\n)*^  through_lost: [^\n]*\n'
                            r'(?:^  #[^\n]*\n)*^  through_min_reach: [^\n]*\n?'
                            r'(?:(?:^  #[^\n]*\n)*^  burst_(?:count|window|share|min_span): '
                            r'[^\n]*\n?)*'
                            r'(?:(?:^  #[^\n]*\n)*^  unmapped_ends: [^\n]*\n?)?', re.MULTILINE)
#: The burst rule's keys (scan_check/burst_*), in the order :func:`burst_yaml` writes them.
BURST_KEYS = ('burst_count', 'burst_window', 'burst_share', 'burst_min_span')


#: A strip_check section at the end of a YAML (tools/strip_rule.py --write), comments and all.
_STRIP_SECTION = re.compile(r'(?:^#[^\n]*\n)*^strip_check:[ \t]*\n(?:^(?:  [^\n]*)?\n?)*\Z',
                            re.MULTILINE)


def split_strip_section(text):
    """``(text without it, the section)`` of a YAML whose last section is ``strip_check`` (with
    the comment lines just above it), or ``(text, '')`` without one."""
    match = _STRIP_SECTION.search(text)
    if match is None:
        return text, ''
    return text[:match.start()].rstrip('\n') + '\n', match.group(0).rstrip('\n') + '\n'


def with_strip_section(text, section):
    """``text`` with its strip_check section (if any) replaced by ``section`` (text ending in
    a newline; '' removes it), after one blank line."""
    text, _ = split_strip_section(text)
    return text if not section else text.rstrip('\n') + '\n\n' + section


def render_keep_fit(base_text, config, scores, train_args, date, command, burst_score=None):
    """``base_text`` (a generated YAML) with ``scan_check/through_lost`` and
    ``through_min_reach`` set from :func:`choose_through_lost`, and a header that says so;
    with ``config.burst_count`` above 0, the burst rule's keys after them.

    Args:
        base_text: the base YAML's text (its own header and keys kept as they are, but a
            previous --keep-fit header and through-share keys, which are replaced).
        config: the chosen config.
        scores: the per-value training scores.
        train_args: the training folders as given.
        date: ISO date for the header.
        command: the command line that made the file (for the header).
        burst_score: the training score of ``config`` with its burst rule (for its comment;
            needed when the rule is on).

    Raises:
        CalibrationError: the base text does not end with its ``scan_check:`` section (the
            keys are appended to it) and, after it, at most a ``strip_check:`` section
            (tools/strip_rule.py --write), which is kept as it is, last.
    """
    base_text, strip_section = split_strip_section(base_text)
    lines = base_text.splitlines()
    while lines and lines[0].startswith(KEEP_FIT_MARK.split(' by ')[0]):
        # A previous --keep-fit header runs up to its blank comment line, and the generated
        # file's own header follows it: anything else is a header edited by hand, whose end
        # this cannot tell.
        end = lines.index('#') if '#' in lines else len(lines)
        if end + 1 >= len(lines) or not lines[end + 1].startswith(GENERATED_MARK):
            raise CalibrationError('the base YAML\'s --keep-fit header does not end with a '
                                   'line "#" followed by "%s...": restore it by hand'
                                   % GENERATED_MARK)
        lines = lines[end + 1:]
    text = '\n'.join(lines) + '\n'
    text = _THROUGH_BLOCK.sub('', text)
    left = re.findall(r'^\s+(through_lost|through_min_reach|burst_\w+|unmapped_ends):', text,
                      re.MULTILINE)
    if left:
        raise CalibrationError('the base YAML has %s outside the block this tool writes '
                               '(through_lost, then through_min_reach, then the burst keys, then '
                               'unmapped_ends, each with its comment): remove them by hand'
                               % ' and '.join(left))
    sections = re.findall(r'^(\w+):\s*$', text, re.MULTILINE)
    if not sections or sections[-1] != 'scan_check':
        raise CalibrationError('the base YAML must end with its scan_check section (as '
                               'tools/calibrate_detector.py writes it), found %s'
                               % (', '.join(sections) or 'no section'))
    how = ' Chosen with this file\'s classifier and windows kept (--keep-fit) among %s on the ' \
        'training runs: %s.' % (_values([float(v) for v, _ in scores]), '; '.join(
            '%s: %s' % (_yaml_float(float(v)), score_sentence(sc)) for v, sc in scores))
    text = text.rstrip('\n') + '\n' + through_yaml(config, how) + '\n'
    if config.burst_count:
        if burst_score is None:
            raise CalibrationError('a burst rule needs its training score')
        chosen = dict(scores).get(config.through_lost)
        text += burst_yaml(config, ' Training runs with it: %s%s.' % (
            score_sentence(burst_score), '' if chosen is None else
            '; without it: %s' % score_sentence(chosen))) + '\n'
    if config.unmapped_ends:
        text += unmapped_yaml(UNMAPPED_TEXT) + '\n'
    header = _wrap('%s on %s; everything else is the file as generated below (its '
                   'classifier, windows and scan check kept). Redo (same inputs and date -> '
                   'byte-identical file):' % (KEEP_FIT_MARK[2:], date), prefix='# ')
    header += ['#   ' + command]
    header += _wrap('Training runs: %s.' % ', '.join(train_args), prefix='# ') + ['#']
    return with_strip_section('\n'.join(header) + '\n' + text, strip_section)


def evaluate(recordings, config):
    """Scores of a config on recordings (held-out ones, normally), replayed as the node runs.

    Uses :func:`detectors.lost_detector_tiers` (the full node path, not the grid's shortcut).

    Raises:
        CalibrationError: a recording's scan feature was computed otherwise than ``config``
            computes it.
    """
    for recording in recordings:
        try:
            detectors.check_scan_check(recording.scan_check, config, recording.path,
                                       reweighable=recording.splits is not None,
                                       min_ranges=recording.min_ranges,
                                       open_recorded=recording.opens is not None)
        except ValueError as error:
            raise CalibrationError(str(error)) from None
    recordings = [r.weighed(config.short_weight, config.min_range, config.open_beams)
                  if config.scan_check else r for r in recordings]
    tiers = [detectors.lost_detector_tiers(r.readings, config, r.pose_fixes)
             for r in recordings]
    return score_recordings(recordings, tiers)


# ----------------------------------------------------------------------------- text

def _yaml_float(value):
    """A float as YAML 1.1 reads it back as a float (always with a '.', never '1e-05')."""
    return np.format_float_positional(float(value), unique=True, trim='0')


def _yaml_list(values):
    return '[%s]' % ', '.join(_yaml_float(v) for v in values)


def within_words(score):
    """What a score's ``within`` counts, in words: "within 15 s of driving", "within 15 s"
    (elapsed: recordings without their ground-truth path), or both kinds pooled."""
    return 'within %.0f s%s' % (detection.WITHIN, {
        'driving': ' of driving', 'mixed': ' (of driving where the run recorded its path, '
        'elapsed where not)'}.get(score.get('measure'), ''))


def score_sentence(score):
    """One sentence of a training or evaluation score."""
    d = score['delocalized']
    delays = d['delay_s']
    elapsed = '' if score.get('measure', 'elapsed') == 'elapsed' else \
        ', %d within %.0f s elapsed' % (d['within_elapsed'], detection.WITHIN)
    return ('%d false tier-2 alarm(s) in %.2f h of normal driving and %d while settling '
            'after %d correct re-seeds; %d/%d delocalizations detected %s (%d '
            'detected at all%s), median delay %s s elapsed' % (
                score['false_alarms'], score['normal_hours'],
                score.get('settle_false_alarms', 0), score.get('reseeds', score['trials']),
                d['within'], d['events'], within_words(score), d['detected'], elapsed,
                report.fmt(delays['median'], 1)))


def frontier_sentence(search):
    """What false alarms would buy on the training runs (the grid's trade-off), as a sentence."""
    words = within_words(search.score)
    steps = ['%d false alarm(s): %d %s (%d silent >= %.0f m)' % (
        count, within, words, silent, detection.HEADLINE_DISTANCE)
        for count, within, silent, _ in search.frontier]
    return 'Best the grid offers per number of false tier-2 alarms on the training runs: %s.' \
        % '; '.join(steps)


def _wrap(text, width=98, prefix='# '):
    """Comment lines of at most ``width`` characters (a number stays with its unit)."""
    # A NUL holds together what must not be split across lines: "15 s", "[0, 1)".
    def keep(match):
        return match.group(1) + '\x00' + match.group(2)
    text = re.sub(r'(\d) (s|m|h|rad)\b', keep, text)
    text = re.sub(r'([\[(]\d+,) (\d+[\])])', keep, text)
    words = [w.replace('\x00', ' ') for w in text.split()]
    lines, line = [], ''
    for word in words:
        if line and len(prefix) + len(line) + 1 + len(word) > width:
            lines.append(prefix + line)
            line = word
        else:
            line = '%s %s' % (line, word) if line else word
    if line:
        lines.append(prefix + line)
    return lines


def _margin(search, name):
    if name not in search.margin:
        return ''
    value, count = search.margin[name]
    return ' Margin: %s instead gives %s false tier-2 alarm(s) on the training runs.' % (
        _yaml_float(value), count)


def _values(values):
    return ', '.join(_yaml_float(v) if isinstance(v, float) else str(v) for v in values)


def _indented(text):
    return _wrap(text, prefix='  # ')


def target_file(open_beams):
    """The shipped file a calibration with or without open beams regenerates (TARGET,
    OPEN_BEAMS_TARGET)."""
    return OPEN_BEAMS_TARGET if open_beams else TARGET


def render_yaml(calibration, train_args, date, options=(), robot_logs=None):
    """The node's YAML with a header and a comment above every key.

    Args:
        calibration: a :class:`Calibration`.
        train_args: the training folders as given on the command line (with ``robot_logs``:
            one name per recording).
        options: further command-line arguments that shaped the result (for the header's
            command; ``--open-beams off|on`` among them also says, above scan_check/open_beams,
            that it set the value). The header names the shipped file of the chosen open_beams
            (:func:`target_file`).
        date: ISO date written in the header (part of the input: the same date gives the
            same bytes).
        robot_logs: for a YAML fitted on a robot's own logs
            (:func:`load_real_log_recordings`): ``(real-logs folder, log, profile, out)``;
            the header then says so and names that command, not the shipped file's.

    Returns:
        The file's text.
    """
    fit, search, quality = calibration.fit, calibration.search, calibration.quality
    score, config, grid = search.score, search.config, search.grid
    target = target_file(config.open_beams)
    short_score = ('Training score of the chosen combination: %d false tier-2 alarm(s), %d/%d '
                   'delocalizations detected %s.' % (
                       all_false_alarms(score), score['delocalized']['within'],
                       score['delocalized']['events'], within_words(score)))
    per_reading = ('On the training readings, at the chosen prob_thresh, the classifier labels '
                   'lost %s of the lost-class and %s of the normal-class readings.' % (
                       report.fmt(quality['lost']['rate'], 1, '%'),
                       report.fmt(quality['normal']['rate'], 1, '%')))
    lines = [
        '%s on %s: do not edit' % (GENERATED_MARK, date),
        '# by hand, regenerate. Load inside the <node> tag so that they land in the node\'s '
        'private',
        '# namespace:  <rosparam command="load" file="$(find lost_and_found)/%s"/>' % target
        if robot_logs is None else
        '# namespace (roslaunch lost_and_found lost_and_found.launch fiducial_map:=TAGS.yaml '
        'lost_detector_config:=%s).' % robot_logs[3],
        '#',
    ]
    if robot_logs is None:
        lines += [
            '# Regenerate (same inputs and date -> byte-identical file, whatever --out says):',
            '#   /usr/bin/python3 tools/calibrate_detector.py %s --date %s --out %s' % (
                ' '.join(list(train_args) + list(options)), date, target),
            '#',
        ] + _wrap('Training runs (the detection suite on the simulator; only the maps %s and '
                  'seeds >= %d are fitted on: the office, Willow Garage, Intel and ACES maps '
                  'and seeds 0-%d are held out):'
                  % (', '.join(TRAINING_MAPS), MIN_TRAINING_SEED, MIN_TRAINING_SEED - 1))
    else:
        folder, log, profile, out = robot_logs
        lines += [
            '# Regenerate (same inputs and date -> byte-identical file):',
            '#   /usr/bin/python3 tools/calibrate_detector.py --real-logs %s --log %s '
            '--profile %s%s --date %s --out %s' % (
                folder, log, profile, ''.join(' ' + o for o in options), date, out),
            '#',
        ] + _wrap('NOT the shipped file: fitted on one robot\'s own log (%s, replayed by the '
                  'real-logs suite through the localizer profile %s), for that robot and '
                  'localizer; score it on the robot\'s other logs (tools/calibrate_detector.py '
                  '--evaluate-real-logs). Training replays:' % (log, profile))
    for recording, arg in zip(calibration.recordings, train_args):
        lines.append('#   %s: map %s, seed %s, %d trials, %d readings' % (
            arg, recording.label, recording.seed, len(recording.trials),
            len(recording.readings)))
        if recording.command and robot_logs is None:
            lines.append('#     %s' % recording.command)
    commands = sorted({r.command for r in calibration.recordings if r.command})
    if robot_logs is not None and commands:    # one real-logs run recorded them all
        lines.append('#   recorded by: %s' % '; '.join(commands))
    counts = calibration.labels
    lines.append('#')
    lines += _wrap(
        'Labels: normal = the estimate within %g m and %g rad of the truth in phases %s '
        '(%d readings); lost = off by more than %g m or %g rad in any phase (%d readings); '
        '%d ambiguous readings dropped.' % (
            detectors.FOUND_XY, detectors.FOUND_YAW, '/'.join(NORMAL_PHASES), counts['normal'],
            detectors.LOST_XY, detectors.LOST_YAW, counts['lost'], counts['ambiguous']))
    lines += _wrap(
        'Training score of this file (LostDetector replayed in order over every training '
        'stream, scored as the detection suite does): %s; silent teleports >= %.0f m: %d/%d '
        '%s.' % (
            score_sentence(score), detection.HEADLINE_DISTANCE,
            score['silent_ge2m']['within'], score['silent_ge2m']['events'],
            within_words(score)))
    lines += _wrap(
        'Limits: the two covariance features cannot see a tight particle cloud at a wrong '
        'pose; only the scan feature can, and only where the scan says something. Per '
        'reading, this classifier labels lost %d of %d lost-class readings (%s) and '
        '%d of %d normal-class readings (%s). %s Held-out scores are not in this file: '
        'run tools/calibrate_detector.py %s.' % (
            quality['lost']['labelled_lost'], quality['lost']['readings'],
            report.fmt(quality['lost']['rate'], 1, '%'),
            quality['normal']['labelled_lost'], quality['normal']['readings'],
            report.fmt(quality['normal']['rate'], 1, '%'), frontier_sentence(search),
            '--evaluate on held-out runs' if robot_logs is None else
            '--evaluate-real-logs on the robot\'s other logs'))
    grid_text = ('Chosen by the grid search (%d combinations replayed on the training streams, '
                 '%d of them without a false tier-2 alarm, %d tied with the choice, which is the '
                 'most cautious of those): training score %s.' % (
                     search.tried, search.zero_false_alarms, search.ties,
                     score_sentence(score)))
    lines += [
        '',
        '# The Gaussian Naive Bayes classifier of one reading (a trained model is data: these '
        'numbers',
        '# are set, not trained at start-up). Features: (sigma_xy, sigma_theta), where sigma_xy '
        'is the',
        '# standard deviation along the major axis of amcl\'s x-y error ellipse [m] and '
        'sigma_theta the',
        '# standard deviation of yaw [rad], and the scan miss fraction (scan_miss_* below).',
        'modified_prob_classifier:',
    ]
    lines += _indented(
        'Prior probability that a reading comes from a localized robot, in (0, 1); the lost '
        'class gets 1 - this. Fitted: GaussianNB class_prior_, the share of normal readings '
        'among the %d labelled training readings (prob_thresh is searched instead of the '
        'prior: both move the same decision boundary). %s' % (fit.n_normal + fit.n_lost,
                                                              per_reading))
    lines.append('  tier0_normal_prior: %s' % _yaml_float(config.tier0_normal_prior))
    lines += _indented(
        'A reading is lost when P(lost | features) is above this, in (0, 1). Grid search over '
        '%s. %s%s' % (_values(grid.prob_thresh), grid_text,
                      _margin(search, 'prob_thresh')))
    lines.append('  prob_thresh: %s' % _yaml_float(config.prob_thresh))
    lines += _indented(
        'Class means [xy-normal (m), theta-normal (rad), xy-lost (m), theta-lost (rad)], each '
        '>= 0. Fitted: GaussianNB theta_ on %d normal and %d lost training readings. %s' % (
            fit.n_normal, fit.n_lost, per_reading))
    lines.append('  slice_mu: %s' % _yaml_list(config.slice_mu))
    lines += _indented(
        'Class standard deviations, same order and units as slice_mu, each > 0. Fitted: the '
        'square roots of GaussianNB var_ on the same readings. %s' % per_reading)
    lines.append('  slice_sigma: %s' % _yaml_list(config.slice_sigma))
    if fit.scan_miss_mu is not None:
        how = ('Fitted: GaussianNB theta_ on the %d normal and %d lost training readings that '
               'have a scan' % fit.n_scan)
    else:
        how = ('Not fitted (the training readings have too few scans: %d normal, %d lost): the '
               'node\'s default' % fit.n_scan)
    lines += _indented(
        'Class means [normal, lost] of the third feature, the scan miss fraction in [0, 1] '
        '(with the scan placed at amcl\'s pose, the share of its beams that miss the map: '
        'those through a mapped obstacle count 1, those that end in free space count '
        'scan_check/short_weight). Used while scan_check is enabled and the reading has a '
        'scan. %s.' % how)
    lines.append('  scan_miss_mu: %s' % _yaml_list(config.scan_miss_mu))
    lines += _indented(
        'Class standard deviations of the scan miss fraction [normal, lost], each > 0. %s, the '
        'square roots of GaussianNB var_, at least %g.' % (how, MIN_SCAN_SIGMA))
    lines.append('  scan_miss_sigma: %s' % _yaml_list(config.scan_miss_sigma))
    lines += [
        '',
        '# Turning per-reading labels into tiers (normal 0, confused 1, lost 2). amcl publishes '
        'only after',
        '# a filter update, so these count readings, not seconds. All four are chosen by the '
        'same grid',
        '# search as prob_thresh (training score above).',
        'lost_detector:',
    ]
    lines += _indented(
        'Readings needed in the queue before anything but normal is reported (integer >= 1, '
        'at most window_meta_tier2_lost). Grid search over %s. %s' % (
            _values(grid.queue_min), short_score))
    lines.append('  queue_min: %d' % config.queue_min)
    lines += _indented(
        'Number of most recent readings over which the lost ratio is taken for tier 2 (integer '
        '>= 1; also the queue length). Grid search over %s (never below %d readings, so that '
        'a few odd readings do not decide). %s' % (
            _values(grid.window_meta_tier2_lost), MIN_WINDOW, short_score))
    lines.append('  window_meta_tier2_lost: %d' % config.window_meta_tier2_lost)
    lines += _indented(
        'Tier 2 (lost) when the fraction of lost readings in that window is strictly above '
        'this, in [0, 1). Grid search over %s. %s%s' % (
            _values(grid.ratio_thresh_detections_tier2_lost), short_score,
            _margin(search, 'ratio_thresh_detections_tier2_lost')))
    lines.append('  ratio_thresh_detections_tier2_lost: %s' % _yaml_float(
        config.ratio_thresh_detections_tier2_lost))
    lines += _indented(
        'Normal readings in a row that end a (sticky) tier 2 and reset the detector (integer '
        '>= 1). Grid search over %s. %s' % (
            _values(grid.window_meta_tier0_normal), short_score))
    lines.append('  window_meta_tier0_normal: %d' % config.window_meta_tier0_normal)
    lines += _indented(
        'After the start and every reset (lost_service resets the detector on every pose '
        'fix), this many readings are judged by the scan miss fraction alone, and one '
        'without a scan not at all (integer >= 0; 0: never): amcl\'s covariance then is the '
        'fix\'s own (rviz, a put-down re-seed, initial_cov_* at bring-up), not a verdict on the '
        'pose. Grid search over %s; false alarms include those while settling after a '
        'correct re-seed. %s' % (_values(grid.settle_readings), short_score))
    lines.append('  settle_readings: %d' % config.settle_readings)
    lines += SCAN_CHECK_YAML.format(
        enabled=str(config.scan_check).lower(), base_frame=config.base_frame,
        hit_tolerance=_yaml_float(config.hit_tolerance),
        short_weight='\n'.join(_indented(short_weight_text(calibration, options)) + [
            '  short_weight: %s' % _yaml_float(config.short_weight)]),
        min_range='\n'.join(_indented(min_range_text(calibration)) + [
            '  min_range: %s' % _yaml_float(config.min_range)]),
        open_beams='\n'.join(_indented(open_beams_text(calibration, options)) + [
            '  open_beams: %s' % ('true' if config.open_beams else 'false')]),
        max_beams=config.max_beams,
        min_beams=config.min_beams,
        stamp_tolerance=_yaml_float(config.stamp_tolerance),
        hold_readings=config.hold_readings,
        through=through_yaml(config, through_lost_text(search, short_score)) + (
            '\n' + unmapped_yaml(UNMAPPED_FIT_TEXT) if config.unmapped_ends else '')
        ).splitlines()
    return '\n'.join(lines) + '\n'


#: What the YAML says above scan_check/through_lost and through_min_reach (how through_lost was
#: chosen is added to the first).
THROUGH_LOST_TEXT = (
    'A settled reading whose scan\'s through share (of the beams that reached the map\'s '
    'obstacles, not short misses, the share that passed through one) is strictly above this is '
    'lost whatever P(lost) says, in (0, 1]; 1: never (off). Unmapped clutter makes beams '
    'short, never makes them pass through a wall, so this holds among clutter where the miss '
    'fraction does not; a map that is wrong (a door mapped shut and standing open) makes '
    'through misses at a right pose.')
THROUGH_MIN_REACH_TEXT = (
    'The through share counts only when at least this share of the scan\'s used beams reached '
    'the map\'s obstacles (hits and through misses), in (0, 1]: a few beams that got past the '
    'clutter say little. Not fitted.')


def through_yaml(config, how):
    """The scan_check/through_lost and through_min_reach lines of the YAML, each with its
    comment (``how``: how through_lost was chosen, appended to its comment)."""
    return '\n'.join(
        _indented(THROUGH_LOST_TEXT + how)
        + ['  through_lost: %s' % _yaml_float(config.through_lost)]
        + _indented(THROUGH_MIN_REACH_TEXT)
        + ['  through_min_reach: %s' % _yaml_float(config.through_min_reach)])


#: What the YAML says above scan_check/unmapped_ends when --keep-fit --unmapped-ends sets it.
UNMAPPED_TEXT = (
    'true: a missed beam that crossed no mapped obstacle and ends off the map, or within '
    'hit_tolerance of an unknown cell or of the grid\'s edge, is not used (the map cannot say '
    'whether it should have returned: a corridor the map stops in); false: it is a through miss '
    'off the map and a short miss on it. Set by --unmapped-ends, not chosen by training score '
    '(bench/RESULTS.md, "Beams that end in unmapped space").')
#: The same for a full fit, which keeps the rule its training runs were recorded with.
UNMAPPED_FIT_TEXT = UNMAPPED_TEXT.replace(
    'Set by --unmapped-ends, not chosen', 'As the training runs were recorded, not chosen')
#: What the YAML says above the burst rule's keys (the training scores are added).
BURST_TEXT = (
    'Rule 7 (core/lost_detector.py): tier 2 when at least burst_count of the last burst_window '
    'settled readings with a through share had one strictly above burst_share, through walls '
    'entered strictly more than burst_min_span (m) apart (scan_agreement.through_span); 0: off. '
    'Right after a silent delocalization the through share often comes in a short burst that '
    'does not fill the window above; a door the map has shut makes one too, but through one '
    'place, or beams off the map\'s open edge through no wall. Chosen on the training runs by '
    'tools/detector_variants.py --variant span (bench/RESULTS.md, "Bursts of beams through walls '
    'all over the map").')


def unmapped_yaml(text):
    """The ``scan_check/unmapped_ends: true`` line of the YAML under its comment ``text``."""
    return '\n'.join(_indented(text) + ['  unmapped_ends: true'])


def burst_yaml(config, how):
    """The scan_check/burst_* lines of the YAML under one comment (``how`` appended)."""
    return '\n'.join(_indented(BURST_TEXT + how) + [
        '  burst_count: %d' % config.burst_count,
        '  burst_window: %d' % config.burst_window,
        '  burst_share: %s' % _yaml_float(config.burst_share),
        '  burst_min_span: %s' % _yaml_float(config.burst_min_span)])


def through_lost_text(search, short_score):
    """How the grid search chose scan_check/through_lost, for its comment."""
    values = search.grid.through_lost
    if len(values) > 1:
        return ' Grid search over %s. %s%s' % (
            _values(values), short_score, _margin(search, 'through_lost'))
    return ' Not searched: the only value tried (tools/calibrate_detector.py --through-lost ' \
        'names others).'


def short_weight_text(calibration, options=()):
    """The comment above scan_check/short_weight: what it is and how it was chosen
    (``options``: the command line's, where ``--short-weights`` may have named one value)."""
    text = ('What a missed beam that ended in free space, short of the map\'s walls, counts '
            'towards the miss fraction, in [0, 1]; a miss that passed through a mapped obstacle '
            'or left the map counts 1. Unmapped people and furniture stop beams short but never '
            'make one pass through a wall: 0 ignores them (and the wrong poses whose beams all '
            'end in open space), 1 counts every missed end point.')
    if len(calibration.weights) > 1:
        text += ' Chosen by training score among %s (best combination of each on the ' \
            'training runs: %s).' % (
                _values([w for w, _ in calibration.weights]),
                '; '.join('%s: %s' % (_yaml_float(w), score_sentence(score))
                          for w, score in calibration.weights))
    elif '--short-weights' in options:
        text += ' Set by --short-weights, not chosen by training score.'
    else:
        text += ' Not fitted: the training runs recorded their misses weighed with it.'
    return text


def min_range_text(calibration):
    """The comment above scan_check/min_range: what it is and how it was chosen."""
    text = ('Beams shorter than this (m, >= 0) are not used: an unmapped object near the laser '
            '(a box or chair the robot stopped at, a person in front of it) fills the view '
            'with returns that miss the map at a right pose; 0 uses every beam the laser '
            'reports.')
    if len(calibration.ranges) > 1:
        text += ' Chosen by training score among %s, with short_weight chosen at each (best ' \
            'combination on the training runs: %s).' % (
                _values([m for m, _, _ in calibration.ranges]),
                '; '.join('%s m (short_weight %s): %s' % (
                    _yaml_float(m), _yaml_float(w), score_sentence(score))
                    for m, w, score in calibration.ranges))
    else:
        text += ' Not fitted: the only value tried (the training runs recorded no other, or ' \
            'tools/calibrate_detector.py --min-ranges named only it).'
    return text


def open_beams_text(calibration, options=()):
    """The comment above scan_check/open_beams: what it is and how it was chosen
    (``options``: the command line's, where ``--open-beams off|on`` may have set it)."""
    text = ('true: the beams without a return (+inf, or at least range_max; never NaN) are '
            'used too, as rays reaching range_max less hit_tolerance: one that runs through a '
            'mapped obstacle misses (the map has a wall where the laser saw none), any other '
            'agrees with the map; false: only beams with a return are used, and a view of open '
            'space with one unmapped box in it is all misses. true needs a laser whose driver '
            'reports no return as +inf or a range of at least range_max (REP 117; some lidar '
            'drivers do so only with an option, and some report NaN or 0); a Kinect through '
            'depthimage_to_laserscan reports NaN, which leaves true nothing to use, so the '
            'shipped default is fitted without open beams.')
    if len(calibration.opens) > 1:
        text += ' Chosen by training score (best combination of each on the training runs: ' \
            '%s).' % '; '.join('%s (min_range %s m, short_weight %s): %s' % (
                'true' if o else 'false', _yaml_float(m), _yaml_float(w), score_sentence(score))
                for o, m, w, score in calibration.opens)
    elif '--open-beams' in options:
        text += ' Set by --open-beams %s, not chosen by training score.' % (
            options[list(options).index('--open-beams') + 1])
    else:
        text += ' Not fitted: the training runs measured their misses with it only.'
    return text


#: The scan_check block of the YAML: geometry of the feature, not fitted (the training runs
#: record the feature with these numbers), except short_weight, min_range and open_beams.
SCAN_CHECK_YAML = """
# The scan check: amcl's covariance says how sure it is, the scan says whether it is right.
# Needs the laser (`scan`), the map (`map`, latched, from map_server) and tf base -> laser.
# Without a map or scan (or with too few usable beams) a reading is classified on the
# covariance alone, and the node logs once that the check is unavailable and why. Not fitted
# but short_weight, min_range and open_beams: the training runs recorded the feature with these
# numbers.
scan_check:
  # true: use the scan miss fraction as a third feature; false: covariance only.
  enabled: {enabled}
  # The robot frame amcl's pose is of (amcl's base_frame_id; base_footprint on a TurtleBot2).
  base_frame: {base_frame}
  # A beam end point this close to a mapped obstacle is a hit (m, > 0). 0.2 m: amcl's tracking
  # error plus map and range noise at a few metres.
  hit_tolerance: {hit_tolerance}
{short_weight}
{min_range}
{open_beams}
  # Beams used per scan at most, evenly spread (integer >= 1): 60 is plenty for a fraction and
  # keeps the check well under a millisecond.
  max_beams: {max_beams}
  # Fewer usable beams (finite, in [max(range_min, min_range), range_max), and with open_beams
  # those without a return) than this give no scan feature (integer >= 1, <= max_beams): a
  # Kinect facing an open hall sees too little to judge (with open_beams, only if its driver
  # reports no return as NaN).
  min_beams: {min_beams}
  # amcl stamps its pose with the stamp of the scan it used; a scan within this many seconds
  # of the pose's stamp is that scan (> 0, well below the scan period).
  stamp_tolerance: {stamp_tolerance}
  # After a reading whose scan missed the map (lost), at most this many readings without a
  # scan feature that the covariance alone calls normal are skipped (integer >= 1): a tight
  # cloud is no evidence against the laser, but a laser that stays blind must not freeze the
  # detector for ever.
  hold_readings: {hold_readings}
{through}"""


def evaluation_rows(name, score):
    """One Markdown row of an evaluation table."""
    s, a, b = score['silent_ge2m'], score['silent_all'], score['bringup']
    return [name, '%d (%s/h)' % (score['false_alarms'], report.fmt(
        score['false_alarms'] / score['normal_hours'] if score['normal_hours'] else None, 2)),
        '%d/%d' % (s['detected'], s['events']), report.fmt(s['within_rate'], 1, '%'),
        report.fmt(s['delay_s']['median'], 1), report.fmt(s['delay_s']['p95'], 1),
        '%d/%d' % (a['within'], a['events']), '%d/%d' % (b['detected'], b['events']),
        '%d/%d' % (score.get('settle_false_alarms', 0), score['trials']),
        str(score['alarm_after_reseed']),
        report.fmt(report.rate(score['tier1_normal'], score['readings_normal']), 1, '%')]


#: Columns of :func:`evaluation_rows`.
EVALUATION_HEADERS = [
    'config', 'false tier-2 alarms', 'silent >= %.0f m detected' % detection.HEADLINE_DISTANCE,
    'within %.0f s of driving (elapsed without the run\'s path)' % detection.WITHIN,
    'delay median (s elapsed)', 'delay p95 (s elapsed)',
    'silent 1-10 m within %.0f s of driving' % detection.WITHIN, 'wrong bring-up detected',
    'false alarms settling after correct re-seeds', 'tier 2 after correct re-seed',
    'tier-1 share of normal readings']
