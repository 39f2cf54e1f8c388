"""Adapt the lost detector's covariance model to a robot's own localizer.

The shipped ``config/lost_detector.yaml`` is fitted on the simulator, whose amcl stand-in
updates every 0.25 m on a dense scan: its *normal* class expects the x-y standard deviation
along the major axis around 0.11 m. Another localizer, or amcl with other particle counts,
odometry noise or a sparser laser, can be right with a cloud several times wider (the Carmen
logs' replays: a median of 0.64-0.75 m while the estimate is right, "Real logs" in
bench/RESULTS.md); the covariance features then read every reading as lost and the detector
sits in tier 2.

Fitting the whole model needs kidnaps and ground truth (``tools/calibrate_detector.py
--real-logs``). This needs neither: a recording of the robot driving *localized*, its amcl
poses only. The model it assumes is that the robot's localizer is the simulated one with its
standard deviations multiplied by one factor per feature, in every state: ``s_xy`` for the x-y
one, ``s_theta`` for the yaw one. Each factor is the median of the feature over the recording
divided by the simulated localizer's own median while it is localized (:data:`SIM_MEDIANS`,
measured on the shipped YAMLs' training maps), and the YAML's class means and standard
deviations of that feature (``slice_mu``, ``slice_sigma``, both classes) are multiplied by it.
Under that model any quantile gives the same factor; the median is the robust one, and the
reference is a median too (the simulated sigmas are skewed: their medians are 0.74 (x-y)
and 0.80 (yaw) of the normal class's means, so the means would make the simulator's own
recording come out 0.8 instead of 1). The YAML adapted must be one fitted on the simulator
(the shipped ones). For a Gaussian Naive Bayes classifier that is exactly the shipped
classifier applied to the robot's features divided by the factors: the scan feature, the
prior, the thresholds and the windows are left as they are (the scan feature compares the
laser with the map, not with the localizer).

Which readings: where the recording has the scan feature (a bag with the laser, given the map;
a real-logs replay), only the readings whose scan agrees with the map (:func:`agreeing`: the
scan alone gives P(lost) below :data:`~lost_and_found.core.lost_detector.SCAN_AGREES_BELOW`,
the same test as the node's :class:`~lost_and_found.core.lost_detector.CovarianceFitWatch`),
since a localizer that had lost track for a stretch of the recording widens its cloud there.
On the Intel log, where the stock localizer is off in a third of the readings, the median over
all readings gives an x-y factor of 13.0, over the agreeing ones 7.6, over those whose estimate
was right (ground truth) 7.9. Without the scan, every reading counts, and the median moves less
with such a stretch than the mean does, but it moves; the tool prints the factor of each third
of the recording and warns when they differ.

Pure functions (readings in, numbers and text out), plus the readers of a bag and of a
``bench real-logs`` run; ``tools/adapt_detector.py`` is the command line.
"""
import math
import re
import textwrap

import numpy as np

from lost_and_found.bench import detectors
from lost_and_found.core.lost_detector import CovarianceError, covariance_features

#: Seconds skipped at the start of a recording by default: amcl converging from its initial
#: pose and spread (the real-logs suite's settle).
SETTLE = 30.0
#: Fewest readings (after the settle) the factors are taken from: amcl publishes after every
#: 0.25 m or 0.2 rad of motion, so 100 readings are a few minutes of driving.
MIN_READINGS = 100
#: The amcl topic read from a bag by default, and its message type.
TOPIC = '/amcl_pose'
POSE_TYPE = 'geometry_msgs/PoseWithCovarianceStamped'
#: The simulated localizer's median (sigma_xy [m], sigma_theta [rad]) while localized, as the
#: tool would take it from a recording of the simulator: the readings of normal driving whose
#: scan agrees with the map, on the shipped YAMLs' training maps (detection suite, 12 trials
#: each, seed 100, 2026-11-28, package at ed5a12a: ``rosrun lost_and_found bench detection
#: --map maps/lab.yaml --fiducials maps/lab_fiducials.yaml --trials 12 --seed 100`` and, with
#: no tags, on ../shared/data's MIT Stata basement; 3618 readings). Per map they differ: lab
#: 0.064 m, Stata basement 0.107 m (long corridors stretch the cloud), so a factor is good to
#: tens of per cent, not better.
SIM_MEDIANS = (0.0812, 0.0390)
#: Largest over smallest factor of the recording's thirds beyond which the tool warns.
SPREAD = 1.5
#: Significant digits of the scaled numbers written into the YAML.
DIGITS = 4
#: The YAML keys whose numbers are scaled, and the feature of each of their four entries.
SCALED_KEYS = ('slice_mu', 'slice_sigma')
_FEATURE_OF_ENTRY = (0, 1, 0, 1)


class AdaptError(ValueError):
    """Input the adaptation cannot use; the message names it."""


def agreeing(readings, config):
    """``(kept, without_scan, disagreeing)``: the readings whose scan agrees with the map
    (their 6th value, the scan miss fraction, gives P(lost) below SCAN_AGREES_BELOW on the
    scan alone), and how many had no scan feature or one that disagreed.
    """
    from lost_and_found.core.lost_detector import SCAN_AGREES_BELOW, build_classifier
    with_scan = [r for r in readings if len(r) > 5 and r[5] is not None]
    if not with_scan:
        return [], len(readings), 0
    misses = np.array([[r[5]] for r in with_scan], dtype=float)
    p_lost = build_classifier(config, True, covariance=False).predict_proba(misses)[:, 1]
    kept = [r for r, p in zip(with_scan, p_lost) if p < SCAN_AGREES_BELOW]
    return kept, len(readings) - len(with_scan), len(with_scan) - len(kept)


def features_of(readings):
    """``(features, refused)``: the covariance features (an (n, 2) array) of the readings the
    node would classify, and how many it would refuse (NaN, non-symmetric, ...), by kind.

    ``readings`` are ``(t, var_x, var_y, cov_xy, var_yaw, ...)`` tuples
    (:mod:`lost_and_found.bench.detectors`).
    """
    rows, refused = [], {}
    for reading in readings:
        try:
            rows.append(covariance_features(detectors.covariance_of(reading)))
        except CovarianceError as error:
            refused[error.kind] = refused.get(error.kind, 0) + 1
    return np.array(rows, dtype=float).reshape(-1, 2), refused


def after_settle(readings, settle=SETTLE):
    """The readings from ``settle`` seconds after the first one on."""
    if settle < 0 or not math.isfinite(settle):
        raise AdaptError('settle %r: must be a number of seconds >= 0' % (settle,))
    if not readings:
        return []
    start = readings[0][0] + settle
    return [r for r in readings if r[0] >= start]


def refused_text(refused):
    """``refused`` (kind -> count) in words, e.g. ``'3 not_finite, 1 not_symmetric'``."""
    return ', '.join('%d %s' % (n, kind) for kind, n in sorted(refused.items()))


def scale_factors(features, refused=None):
    """``(s_xy, s_theta)`` and the medians they come from (over :data:`SIM_MEDIANS`).

    ``refused`` (kind -> count of the recording's poses the node would refuse) only goes into
    the message when there are too few readings.

    Raises:
        AdaptError: fewer than :data:`MIN_READINGS` readings, or a median of 0 (a localizer
            that publishes no covariance): nothing to scale by.
    """
    if len(features) < MIN_READINGS:
        raise AdaptError('%d usable amcl poses after the settle%s: need at least %d (a few '
                         'minutes of driving; amcl publishes only while the robot moves)'
                         % (len(features), ' (refused as the node would: %s)'
                            % refused_text(refused) if refused else '', MIN_READINGS))
    medians = tuple(float(m) for m in np.median(features, axis=0))
    for name, median in zip(('sigma_xy', 'sigma_theta'), medians):
        if not median > 0:
            raise AdaptError('the median %s of the recording is %r: the localizer publishes '
                             'no covariance to scale by' % (name, median))
    return tuple(m / n for m, n in zip(medians, SIM_MEDIANS)), medians


def thirds(features):
    """The x-y factor of each third of the readings (in order), and whether they differ by
    more than :data:`SPREAD` (largest over smallest): a recording that was not localized
    throughout, or a localizer whose cloud changes from place to place, shows that way.

    The thirds are taken from what :func:`scale_factors` accepted, so each holds at least a
    third of :data:`MIN_READINGS`.
    """
    parts = np.array_split(np.asarray(features, dtype=float), 3)
    xy = [float(np.median(part[:, 0])) / SIM_MEDIANS[0] for part in parts]
    spread = max(xy) / min(xy) if min(xy) > 0 else math.inf
    return xy, spread > SPREAD


def round_sig(value, digits=DIGITS):
    """``value`` rounded to ``digits`` significant digits."""
    return float('%.*g' % (digits, value))


def scaled(values, factors):
    """The four ``slice_mu`` or ``slice_sigma`` numbers scaled by ``(s_xy, s_theta)``."""
    return [round_sig(float(v) * factors[_FEATURE_OF_ENTRY[i]]) for i, v in enumerate(values)]


def lost_share(features, config):
    """Share of the readings the covariance features alone label lost under ``config``."""
    from lost_and_found.core.lost_detector import build_classifier
    if not len(features):
        return float('nan')
    classifier = build_classifier(config)
    p_lost = classifier.predict_proba(features)[:, 1]
    return float(np.mean(p_lost > config.prob_thresh))


def _set_key(text, key, value):
    """``text`` with the value of the YAML line ``key: ...`` replaced by ``value`` (unchanged
    without such a line).

    Raises:
        AdaptError: the text holds the key more than once.
    """
    pattern = re.compile(r'^(\s*%s:\s*)[^\s#]+' % key, re.MULTILINE)
    if len(pattern.findall(text)) > 1:
        # A YAML loader keeps one of them silently: which one the node reads is not ours to
        # guess.
        raise AdaptError('the detector YAML holds %s more than once: keep one (under '
                         'scan_check)' % key)
    return pattern.sub(lambda m: m.group(1) + value, text)


def render(source_text, config, factors, header, through_lost=None):
    """The YAML ``source_text`` with its ``slice_mu`` and ``slice_sigma`` scaled by
    ``factors`` and ``header`` (paragraphs, each wrapped into comment lines at 100 columns)
    on top; every other line as in the source, but ``scan_check/through_lost``, set to
    ``through_lost`` when that is given and the source has the key (without it the node's
    default, off, holds anyway), and then, when ``through_lost`` is 1, the burst rule's
    ``scan_check/burst_count`` set to 0 (off) too: it reads the same through share.

    Raises:
        AdaptError: the source does not hold each scaled key exactly once, on one line, or
            (with ``through_lost``) holds ``through_lost`` or ``burst_count`` more than once.
    """
    text = source_text
    if through_lost is not None:
        text = _set_key(text, 'through_lost', '%g' % through_lost)
        if through_lost >= 1.0:
            text = _set_key(text, 'burst_count', '0')
    for key in SCALED_KEYS:
        pattern = re.compile(r'^(\s*%s:\s*)\[[^\]\n]*\](.*)$' % key, re.MULTILINE)
        if len(pattern.findall(text)) != 1:
            raise AdaptError('the detector YAML must hold %s exactly once, as a one-line '
                             'list [a, b, c, d]' % key)
        numbers = ', '.join('%g' % v for v in scaled(getattr(config, key), factors))
        text = pattern.sub(lambda m: '%s[%s]%s' % (m.group(1), numbers, m.group(2)), text)
    lines = []
    for paragraph in header:
        lines += textwrap.wrap(paragraph, 98, initial_indent='# ', subsequent_indent='# ',
                               break_long_words=False, break_on_hyphens=False)
    return '\n'.join(lines) + '\n#\n' + text if lines else text


def _check_topic(path, topics, topic, msg_type, option):
    """Raise AdaptError unless the bag has ``topic`` of ``msg_type``."""
    if topic not in topics:
        raise AdaptError('%s: no topic %s (it has %s): give %s' % (
            path, topic, ', '.join(sorted(topics)) or 'none', option))
    if topics[topic].msg_type != msg_type:
        raise AdaptError('%s: %s is %s, not %s' % (path, topic, topics[topic].msg_type,
                                                   msg_type))


class _BagScans:
    """The scan feature of a bag's amcl poses, as the lost_detector node computes it: the
    bag's scans, its tf (base frame -> laser) and a map_server map, paired by stamp."""

    def __init__(self, config, map_path, base_frame=None):
        """Load the map (AdaptError naming it when it cannot be read); the robot frame is
        ``base_frame`` or the YAML's ``scan_check/base_frame``."""
        import tf2_ros
        from lost_and_found.core.scan_agreement import ScanChecker
        from lost_and_found.sim.gridmap import load_map
        try:
            grid = load_map(map_path)
        except ValueError as error:
            raise AdaptError(str(error)) from None
        self.base_frame = base_frame or config.base_frame
        self.checker = ScanChecker.from_config(config)
        self.checker.distance_map = detectors.detector_map(grid)
        self.tf = tf2_ros.Buffer(debug=False)   # debug: a ROS service, needs a master
        self.mounts = {}
        self.no_mount = {}       # laser frame -> why its mount could not be had
        self.without = {}        # why a pose got no scan feature -> how many
        self.pending = []       # readings (without the feature yet) waiting for their scan
        self.done = []

    def on_tf(self, msg, static):
        """Feed a tf message to the buffer (as geometry_msgs types: a bag's own message
        classes are not, and tf2 warns about each)."""
        from geometry_msgs.msg import TransformStamped
        for recorded in msg.transforms:
            transform = TransformStamped()
            transform.header.stamp = recorded.header.stamp
            transform.header.frame_id = recorded.header.frame_id
            transform.child_frame_id = recorded.child_frame_id
            t, r = recorded.transform.translation, recorded.transform.rotation
            transform.transform.translation.x, transform.transform.translation.y, \
                transform.transform.translation.z = t.x, t.y, t.z
            transform.transform.rotation.x, transform.transform.rotation.y, \
                transform.transform.rotation.z, transform.transform.rotation.w = \
                r.x, r.y, r.z, r.w
            if static:
                self.tf.set_transform_static(transform, 'bag')
            else:
                self.tf.set_transform(transform, 'bag')

    def on_scan(self, msg):
        """Keep a scan (once its laser's mount is known) and complete the poses waiting."""
        import rospy
        import tf2_ros
        from lost_and_found.nodes.conversions import laser_mount_from_transform, scan_from_msg
        frame = msg.header.frame_id
        if frame not in self.mounts:
            try:
                t = self.tf.lookup_transform(self.base_frame, frame, rospy.Time(0))
                self.mounts[frame] = laser_mount_from_transform(t.transform)
            except (tf2_ros.TransformException, ValueError) as error:
                # TransformException: also a frame id tf2 refuses (a leading '/').
                self.no_mount[frame] = str(error).splitlines()[0] if str(error) else \
                    type(error).__name__
                return
        self.checker.add_scan(msg.header.stamp.to_sec(), scan_from_msg(msg),
                              self.mounts[frame])
        waiting, self.pending = self.pending, []
        for reading, pose in waiting:
            self.on_pose(reading, pose)

    def on_pose(self, reading, pose):
        """A reading with its scan feature, or held until its scan may come."""
        miss = self.checker.feature(reading[0], pose)
        if miss is None and self.checker.waiting:
            self.pending.append((reading, pose))
            return
        if miss is None:
            kind = self.checker.reason.split(' (')[0]
            self.without[kind] = self.without.get(kind, 0) + 1
        self.done.append(tuple(reading[:5]) + (miss,))

    def finish(self):
        """Every reading, those still waiting without the feature, in time order."""
        if self.pending:
            kind = 'no scan stamped like the pose'
            self.without[kind] = self.without.get(kind, 0) + len(self.pending)
        self.done += [tuple(reading[:5]) + (None,) for reading, _ in self.pending]
        self.pending = []
        return sorted(self.done, key=lambda r: r[0])

    def notes(self):
        """Sentences on what kept the scan feature from poses, if anything."""
        notes = ['no transform from %s to the scans\' frame %r in the bag (%s): record '
                 '/tf_static and /tf too, or give --base-frame; those scans were not used'
                 % (self.base_frame, frame, why) for frame, why in sorted(self.no_mount.items())
                 if frame not in self.mounts]
        if self.without:
            notes.append('poses without the scan feature: %s' % ', '.join(
                '%d %s' % (n, why) for why, n in sorted(self.without.items())))
        return notes


def readings_from_bag(path, topic=TOPIC, config=None, map_path=None, scan_topic='/scan',
                      base_frame=None):
    """``(readings, refused, notes)``: the ``(t, var_x, var_y, cov_xy, var_yaw, miss)``
    readings of ``topic`` in a bag, in time order, how many poses the node would refuse, by
    kind (the whole 6x6 covariance is checked as the node checks it; those poses are left
    out), and what kept the scan feature away, if anything (a list of sentences).

    ``miss`` is the scan miss fraction computed with ``config``'s scan_check numbers when
    ``map_path`` (a map_server YAML) is given: from ``scan_topic`` and the bag's /tf_static and
    /tf (``base_frame``, default the YAML's scan_check/base_frame, -> laser); None without a
    map or for a pose that got no feature (the notes say why).

    Raises:
        AdaptError: the bag or the map cannot be read (also part-way), or the bag has no such
            topic, or one of another type.
    """
    import struct

    import genpy
    import rosbag
    try:
        return _read_bag(path, topic, config, map_path, scan_topic, base_frame)
    except (rosbag.ROSBagException, genpy.DeserializationError, struct.error,
            EOFError) as error:          # a bag damaged part-way (ROSBagFormatException, ...)
        raise AdaptError('%s: cannot read the bag (%s: %s)' % (
            path, type(error).__name__, error)) from None


def _read_bag(path, topic, config, map_path, scan_topic, base_frame):
    """:func:`readings_from_bag` without the translation of a damaged bag's errors."""
    import rosbag
    from lost_and_found.nodes.conversions import yaw_from_quaternion
    try:
        bag = rosbag.Bag(path)
    except (OSError, rosbag.ROSBagException) as error:
        raise AdaptError('%s: cannot read the bag (%s)' % (path, error)) from None
    scans = _BagScans(config, map_path, base_frame) if map_path else None
    with bag:
        topics = bag.get_type_and_topic_info().topics
        _check_topic(path, topics, topic, POSE_TYPE, '--topic')
        wanted = [topic]
        if scans is not None:
            _check_topic(path, topics, scan_topic, 'sensor_msgs/LaserScan', '--scan-topic')
            wanted += [scan_topic] + [t for t in ('/tf_static', '/tf') if t in topics]
        readings, refused = [], {}
        for name, msg, _ in bag.read_messages(topics=wanted):
            if name in ('/tf_static', '/tf'):
                scans.on_tf(msg, name == '/tf_static')
                continue
            if name == scan_topic:
                scans.on_scan(msg)
                continue
            try:
                covariance_features(msg.pose.covariance)
            except CovarianceError as error:
                refused[error.kind] = refused.get(error.kind, 0) + 1
                continue
            reading = detectors.reading_from_covariance(msg.header.stamp.to_sec(),
                                                        msg.pose.covariance)
            if scans is None:
                readings.append(reading + (None,))
            else:
                p = msg.pose.pose
                scans.on_pose(reading, (p.position.x, p.position.y,
                                        yaw_from_quaternion(p.orientation)))
    notes = []
    if scans is not None:
        readings = scans.finish()
        notes = scans.notes()
    readings.sort(key=lambda r: r[0])
    return readings, refused, notes


def readings_from_real_logs(folder, log, profile, config):
    """The ``(t, var_x, var_y, cov_xy, var_yaw, miss)`` readings of a ``bench real-logs``
    run's unmodified replay of ``log`` with the localizer ``profile``, the scan miss fraction
    weighed with ``config``'s scan_check numbers (no ground truth is used).

    Raises:
        AdaptError: a missing or bad file, no such replay, or misses recorded in a way that
            cannot be weighed with ``config``'s numbers.
    """
    from lost_and_found.bench import calibration
    try:
        recordings = calibration.load_real_log_recordings(folder, log, profile)
        for recording in recordings:
            if recording.trials[0]['kind'] == 'unmodified':
                weighed = recording.weighed(config.short_weight, config.min_range,
                                            config.open_beams)
                return [tuple(r[:6]) for r in weighed.readings]
    except calibration.CalibrationError as error:
        raise AdaptError('%s (the real-logs replays are read as for a fit: the run must hold '
                         'the spliced copies too)' % error) from None
    raise AdaptError('%s: no unmodified replay of log %r with localizer profile %r'
                     % (folder, log, profile))
