"""lost_detector's node adapter without a ROS master: message conversions and scan pairing."""
import math

import numpy as np
import pytest
import rospy
from geometry_msgs.msg import PoseWithCovarianceStamped, Transform
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import LaserScan

from lost_and_found.core.lost_detector import LostDetector, LostDetectorConfig
from lost_and_found.core.scan_agreement import LaserMount
from lost_and_found.nodes.conversions import (
    distance_map_from_msg, laser_mount_from_transform, quaternion_from_yaw, scan_from_msg)
from lost_and_found.nodes.lost_detector import LostDetectorNode

RES = 0.1
SIZE = 6.0
MOUNT = LaserMount(0.1, 0.0, 0.0)
ANGLES = np.linspace(-0.5, 0.5, 41)
TRUTH = (2.0, 3.0, 0.0)
#: 1.5 m too far ahead: the scan of the wall at x = 5 m placed there runs through it.
WRONG = (3.5, 3.0, 0.0)


class Recorder:
    """Stands in for a rospy.Publisher: keeps what is published."""

    def __init__(self):
        """Nothing published yet."""
        self.data = []

    def publish(self, msg):
        """Record the String's data."""
        self.data.append(msg.data)


def wall_map():
    """A 6 x 6 m OccupancyGrid with one wall along x = 5 m (everything else free)."""
    n = int(SIZE / RES)
    cells = np.zeros((n, n), dtype=np.int8)
    cells[:, int(5.0 / RES)] = 100
    msg = OccupancyGrid()
    msg.info.resolution = RES
    msg.info.width = msg.info.height = n
    msg.info.origin.orientation.w = 1.0
    msg.data = cells.ravel().tolist()
    return msg


def scan_msg(stamp, pose=TRUTH):
    """What a laser at MOUNT on a robot at ``pose`` sees of the wall at x = 5 m."""
    x, y, yaw = pose
    lx = x + MOUNT.x * math.cos(yaw)
    msg = LaserScan()
    msg.header.stamp = rospy.Time.from_sec(stamp)
    msg.header.frame_id = 'laser'
    msg.angle_min, msg.angle_increment = float(ANGLES[0]), float(ANGLES[1] - ANGLES[0])
    msg.range_min, msg.range_max = 0.1, 10.0
    msg.ranges = [(5.0 - lx) / math.cos(yaw + a) for a in ANGLES]
    return msg


def pose_msg(stamp, pose, sigma_xy=0.05, sigma_yaw=0.03):
    """An amcl_pose with a tight covariance."""
    msg = PoseWithCovarianceStamped()
    msg.header.stamp = rospy.Time.from_sec(stamp)
    msg.header.frame_id = 'map'
    msg.pose.pose.position.x, msg.pose.pose.position.y = pose[0], pose[1]
    msg.pose.pose.orientation = quaternion_from_yaw(pose[2])
    cov = [0.0] * 36
    cov[0] = cov[7] = sigma_xy ** 2
    cov[35] = sigma_yaw ** 2
    msg.pose.covariance = cov
    return msg


@pytest.fixture
def node():
    """A node with the map and the laser mount known, its publisher recorded."""
    config = LostDetectorConfig(queue_min=1, window_meta_tier2_lost=2,
                                ratio_thresh_detections_tier2_lost=0.5)
    n = LostDetectorNode(LostDetector(config), config)
    n._status_pub = Recorder()
    n._p_lost_pub = Recorder()
    n._mounts.known['laser'] = MOUNT
    n.on_map(wall_map())
    return n


def test_conversions_of_map_scan_and_mount():
    dmap = distance_map_from_msg(wall_map())
    assert dmap.occupied_cells == int(SIZE / RES)
    assert dmap.distance([5.05], [3.0])[0] == 0.0
    scan = scan_from_msg(scan_msg(1.0))
    assert len(scan.ranges) == len(ANGLES) and scan.range_max == 10.0
    t = Transform()
    t.translation.x, t.translation.y = 0.1, 0.02
    t.rotation.x, t.rotation.w = 1.0, 0.0            # rolled by pi: upside down
    mount = laser_mount_from_transform(t)
    assert (mount.x, mount.y, mount.upside_down) == (0.1, 0.02, True)
    assert mount.yaw == pytest.approx(0.0)
    t.rotation.x = t.rotation.w = 0.0                # not a rotation
    with pytest.raises(ValueError):
        laser_mount_from_transform(t)


def test_a_tight_pose_whose_scan_misses_the_map_is_lost(node):
    for stamp in (1.0, 1.5):
        node.on_scan(scan_msg(stamp))
        node.on_pose(pose_msg(stamp, WRONG))
    assert node._status_pub.data[-1] == 'lost'


@pytest.mark.parametrize('through_lost, expected', [(0.5, 'lost'), (1.0, 'normal')])
def test_the_through_share_alone_makes_a_reading_lost(through_lost, expected):
    # A classifier turned upside down (a full miss is the normal class's mean) leaves only the
    # through share to say that the beams ran through the wall at x = 5 m.
    config = LostDetectorConfig(queue_min=1, window_meta_tier2_lost=2,
                                ratio_thresh_detections_tier2_lost=0.5,
                                scan_miss_mu=(1.0, 0.0), through_lost=through_lost)
    n = LostDetectorNode(LostDetector(config), config)
    n._status_pub, n._p_lost_pub = Recorder(), Recorder()
    n._mounts.known['laser'] = MOUNT
    n.on_map(wall_map())
    for stamp in (1.0, 1.5):
        n.on_scan(scan_msg(stamp))
        n.on_pose(pose_msg(stamp, WRONG))
    assert n._status_pub.data[-1] == expected
    assert n._p_lost_pub.data[-1] < 0.5          # the classifier's own verdict: normal


def test_a_tight_pose_whose_scan_fits_stays_normal(node):
    for stamp in (1.0, 1.5, 2.0):
        node.on_scan(scan_msg(stamp))
        node.on_pose(pose_msg(stamp, TRUTH))
    assert node._status_pub.data == ['normal'] * 3


def test_a_pose_that_arrives_before_its_scan_waits_for_it(node):
    node.on_scan(scan_msg(1.0))
    node.on_pose(pose_msg(1.0, TRUTH))
    node.on_pose(pose_msg(1.5, WRONG))               # its scan is not in yet: held
    assert node._status_pub.data == ['normal']
    node.on_scan(scan_msg(1.5))                      # now it is classified, with the scan
    assert node._status_pub.data == ['normal', 'confused']


def test_a_held_pose_is_classified_without_the_scan_when_the_next_pose_comes(node):
    node.on_scan(scan_msg(1.0))
    node.on_pose(pose_msg(1.0, TRUTH))
    node.on_pose(pose_msg(1.5, TRUTH))               # held
    node.on_pose(pose_msg(2.0, TRUTH))               # the held one goes out on covariance
    assert node._status_pub.data == ['normal', 'normal']
    node.on_scan(scan_msg(2.0))
    assert node._status_pub.data == ['normal'] * 3


def test_without_a_map_or_with_the_check_off_the_covariance_decides(node):
    node._checker.distance_map = None
    node.on_scan(scan_msg(1.0))
    node.on_pose(pose_msg(1.0, (2.0, 3.0, 0.6)))     # wrong, but nothing can tell
    assert node._status_pub.data == ['normal']
    config = LostDetectorConfig(scan_check=False)
    off = LostDetectorNode(LostDetector(config), config)
    off._status_pub = Recorder()
    off._p_lost_pub = Recorder()
    off.on_pose(pose_msg(1.0, TRUTH))
    assert off._status_pub.data == ['normal'] and off._checker is None
    # every classified reading also publishes its P(lost), for lost_service
    assert len(off._p_lost_pub.data) == 1 and 0.0 <= off._p_lost_pub.data[0] < 0.5


def test_a_bad_map_is_ignored_and_the_old_one_kept(node):
    bad = wall_map()
    bad.info.width = 7                               # data no longer fits the size
    before = node._checker.distance_map
    node.on_map(bad)
    assert node._checker.distance_map is before


def shipped_like_node(**changes):
    """A node like ``node`` with the rules that follow the beams (the burst rule's span,
    ``unmapped_ends``), as the default YAML has them."""
    config = LostDetectorConfig(queue_min=1, window_meta_tier2_lost=2,
                                ratio_thresh_detections_tier2_lost=0.5, burst_count=4,
                                burst_window=5, unmapped_ends=True, **changes)
    n = LostDetectorNode(LostDetector(config), config)
    n._status_pub, n._p_lost_pub = Recorder(), Recorder()
    n._mounts.known['laser'] = MOUNT
    n.on_map(wall_map())
    return n


@pytest.mark.parametrize('make', [shipped_like_node, lambda: None])
def test_a_pose_that_is_not_finite_is_skipped_and_the_next_one_classified(make, node,
                                                                          monkeypatch):
    n = make() or node
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', warnings.append)
    bad = pose_msg(1.0, TRUTH)
    bad.pose.pose.position.x = float('nan')
    n.on_scan(scan_msg(1.0))
    n.on_pose(bad)
    assert n._status_pub.data == [] and n._pending is None
    assert len(warnings) == 1 and 'not finite' in warnings[0]
    n.on_scan(scan_msg(1.5))
    n.on_pose(pose_msg(1.5, TRUTH))
    assert n._status_pub.data == ['normal']


@pytest.mark.parametrize('field', ['angle_min', 'angle_increment'])
def test_a_scan_whose_angles_are_not_finite_leaves_the_reading_to_the_covariance(field):
    n = shipped_like_node()
    for k in range(4):
        stamp = 1.0 + 0.5 * k
        scan = scan_msg(stamp)
        setattr(scan, field, float('inf') if k % 2 else float('nan'))
        n.on_scan(scan)
        n.on_pose(pose_msg(stamp, TRUTH))   # tight and right: normal on the covariance
    assert n._status_pub.data == ['normal'] * 4
    assert 'not finite' in n._checker.reason


def test_a_scan_check_that_fails_leaves_that_reading_to_the_covariance(monkeypatch):
    n = shipped_like_node()
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', warnings.append)

    def broken(*_args, **_kwargs):
        raise ValueError('a scan nobody foresaw')
    monkeypatch.setattr(n._checker, 'measure_with_span', broken)
    n.on_scan(scan_msg(1.0))
    n.on_pose(pose_msg(1.0, TRUTH))
    assert n._status_pub.data == ['normal'] and n._pending is None
    assert len(warnings) == 1 and 'a scan nobody foresaw' in warnings[0]
    n.on_scan(scan_msg(1.5))                         # the failed pose is not tried again
    assert n._status_pub.data == ['normal']


def test_reset_drops_a_held_pose(node):
    node.on_scan(scan_msg(1.0))
    node.on_pose(pose_msg(1.5, TRUTH))               # held
    node.on_reset(None)
    node.on_scan(scan_msg(1.5))
    assert node._status_pub.data == ['normal']       # only the reset's


def test_open_beams_on_a_nan_laser_warn_once(monkeypatch):
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', lambda text, *args: warnings.append(text % args))
    monkeypatch.setattr('lost_and_found.nodes.lost_detector.NAN_DRIVER_SCANS', 2)
    config = LostDetectorConfig(open_beams=True)
    n = LostDetectorNode(LostDetector(config), config)
    n._mounts.known['laser'] = MOUNT
    for stamp in (1.0, 1.1, 1.2):
        msg = scan_msg(stamp)
        msg.ranges = [float('nan')] + list(msg.ranges[1:])
        n.on_scan(msg)
    assert len(warnings) == 1 and 'report no return as NaN' in warnings[0]
    # Without open beams there is nothing to warn about.
    off = LostDetectorNode(LostDetector(LostDetectorConfig()), LostDetectorConfig())
    assert off._no_return is None


def _drive_watched(monkeypatch, config, **cloud):
    """A node (fit watch window 5) fed 12 poses at the truth with their fitting scans and the
    cloud ``cloud`` (pose_msg's sigmas); returns it and the warnings it logged."""
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', lambda text, *args: warnings.append(text % args))
    from lost_and_found.core.lost_detector import CovarianceFitWatch
    monkeypatch.setattr(CovarianceFitWatch, 'WINDOW', 5)
    n = LostDetectorNode(LostDetector(config), config)
    n._status_pub, n._p_lost_pub = Recorder(), Recorder()
    n._mounts.known['laser'] = MOUNT
    n.on_map(wall_map())
    for i in range(12):
        stamp = 1.0 + 0.5 * i
        n.on_scan(scan_msg(stamp))
        n.on_pose(pose_msg(stamp, TRUTH, **cloud))
    return n, warnings


def test_a_wide_cloud_on_an_agreeing_scan_gets_one_warning_naming_the_tool(monkeypatch):
    _, warnings = _drive_watched(monkeypatch, LostDetectorConfig(), sigma_xy=2.0, sigma_yaw=1.0)
    advice = [w for w in warnings if 'adapt_detector' in w]
    assert len(advice) == 1 and 'wider than this YAML' in advice[0]


def test_a_fitting_cloud_gets_no_such_warning_and_without_the_scan_check_no_watch(monkeypatch):
    n, warnings = _drive_watched(monkeypatch, LostDetectorConfig())
    assert warnings == [] and not n._fit_watch.told
    off = LostDetectorConfig(scan_check=False)
    assert LostDetectorNode(LostDetector(off), off)._fit_watch is None


def test_the_fit_watch_ignores_settling_readings(monkeypatch):
    # All 12 readings settle: their covariance is the fix's own.
    _, warnings = _drive_watched(monkeypatch, LostDetectorConfig(settle_readings=12),
                                 sigma_xy=2.0, sigma_yaw=1.0)
    assert not [w for w in warnings if 'adapt_detector' in w]


class OdometryTf:
    """A tf buffer whose odom -> base_footprint is the map pose ``odom`` gives (or none)."""

    def __init__(self, odom=lambda stamp: TRUTH):
        self.odom = odom
        self.asked = []

    def lookup_transform(self, target, source, stamp):
        import tf2_ros
        from geometry_msgs.msg import TransformStamped
        self.asked.append((target, source, stamp.to_sec()))
        pose = self.odom(stamp.to_sec())
        if pose is None:
            raise tf2_ros.ExtrapolationException('no odometry then')
        t = TransformStamped()
        t.transform.translation.x, t.transform.translation.y = pose[:2]
        t.transform.rotation = quaternion_from_yaw(pose[2])
        return t


def strip_node(monkeypatch, odom=lambda stamp: TRUTH, **changes):
    """A node with rule 9 on (one low strip of 5 returns is tier 2) and odometry from
    ``odom``; the strip verdicts the detector is given are recorded in ``node.strips``."""
    options = dict(strip_count=1, strip_readings=1, strip_min_points=5)
    options.update(changes)
    config = LostDetectorConfig(queue_min=1, window_meta_tier2_lost=2,
                                ratio_thresh_detections_tier2_lost=0.5, **options)
    n = LostDetectorNode(LostDetector(config), config)
    n._status_pub, n._p_lost_pub = Recorder(), Recorder()
    n._mounts.known['laser'] = MOUNT
    n._tf_buffer = OdometryTf(odom)
    n.on_map(wall_map())
    n.strips = []
    update = n._detector.update

    def recording(features, through=None, span=None, strip=None):
        n.strips.append(strip)
        return update(features, through, span, strip)
    monkeypatch.setattr(n._detector, 'update', recording)
    return n


def test_the_strip_of_odometry_placed_returns_judges_each_reading(monkeypatch):
    n = strip_node(monkeypatch)
    for stamp in (1.0, 1.5):
        n.on_scan(scan_msg(stamp))
        n.on_pose(pose_msg(stamp, TRUTH))
    # At the truth the wall lies under the returns: not low.
    assert n.strips == [False, False]
    assert n._tf_buffer.asked[-1] == ('odom', 'base_footprint', 1.5)
    # 1.5 m too far ahead the strip misses the wall, which fits 1.5 m back: low, tier 2.
    n.on_scan(scan_msg(2.0))
    n.on_pose(pose_msg(2.0, WRONG))
    assert n.strips[-1] is True and n._status_pub.data[-1] == 'lost'
    # A reset empties the strip: the next reading's strip holds one scan.
    n.on_reset(None)
    assert len(n._strip.strip(2.0, TRUTH)) == 0


def test_without_odometry_or_with_rule_9_off_a_reading_has_no_strip_verdict(monkeypatch):
    from lost_and_found.nodes.lost_detector import STRIP_ODOM_WAIT
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', warnings.append)
    n = strip_node(monkeypatch, odom=lambda stamp: None)
    for stamp in (1.0, 1.05 + STRIP_ODOM_WAIT):     # the first waits, then goes without
        n.on_scan(scan_msg(stamp))
        n.on_pose(pose_msg(stamp, TRUTH))
    assert n.strips == [None, None]
    assert len(warnings) == 1 and 'no odometry (odom -> base_footprint)' in warnings[0]
    off = strip_node(monkeypatch, strip_count=0)
    off.on_scan(scan_msg(1.0))
    off.on_pose(pose_msg(1.0, TRUTH))
    assert off.strips == [None] and off._strip is None and off._tf_buffer.asked == []


def test_a_scan_whose_odometry_comes_late_waits_for_it(monkeypatch):
    """tf's odom -> base for a scan's stamp may come after amcl's pose for that scan: the
    scan waits (its reading without a verdict) and joins the strip, in order, once odometry
    is in; one whose odometry has not come STRIP_ODOM_WAIT s later is left out, warned."""
    from lost_and_found.nodes.lost_detector import STRIP_ODOM_WAIT
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', warnings.append)
    latest = [0.0]
    n = strip_node(monkeypatch, odom=lambda stamp: TRUTH if stamp <= latest[0] else None)
    n.on_scan(scan_msg(1.0))
    n.on_pose(pose_msg(1.0, TRUTH))
    assert n.strips == [None] and len(n._strip._scans) == 0
    latest[0] = 1.5                                     # odometry for both scans is in
    n.on_scan(scan_msg(1.5))
    n.on_pose(pose_msg(1.5, TRUTH))
    assert n.strips == [None, False]
    assert [t for t, _ in n._strip._scans] == [1.0, 1.5] and warnings == []
    # odometry stops: the scans wait, then the oldest goes without
    stamps = [1.6, 1.7, 1.65 + STRIP_ODOM_WAIT]
    for stamp in stamps:
        n.on_scan(scan_msg(stamp))
        n.on_pose(pose_msg(stamp, TRUTH))
    assert n.strips[2:] == [None] * 3
    assert len(warnings) == 1 and 'no odometry (odom -> base_footprint)' in warnings[0]
    assert [t for t, _, _ in n._unplaced] == pytest.approx(stamps[1:])
    latest[0] = 10.0
    n.on_scan(scan_msg(2.5))
    n.on_pose(pose_msg(2.5, TRUTH))
    assert n.strips[-1] is False and not n._unplaced
    assert [t for t, _ in n._strip._scans] == pytest.approx([1.0, 1.5] + stamps[1:] + [2.5])


def test_odometry_always_a_reading_late_leaves_rule_9_a_reading_late_not_off(monkeypatch):
    """Each reading's scan waits; the one before it is placed and judged at its own
    estimate."""
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', warnings.append)
    latest = [0.0]
    n = strip_node(monkeypatch, odom=lambda stamp: TRUTH if stamp <= latest[0] else None)
    previous = 0.0
    for stamp, estimate in ((1.0, TRUTH), (1.5, TRUTH), (2.0, WRONG), (2.5, TRUTH)):
        latest[0] = previous                            # odometry up to the last reading
        n.on_scan(scan_msg(stamp))
        n.on_pose(pose_msg(stamp, estimate))
        previous = stamp
    # 2.0's wrong estimate is judged (low) at the next reading, 2.5's is still waiting
    assert n.strips == [None, False, False, True] and warnings == []
    assert [t for t, _, _ in n._unplaced] == pytest.approx([2.5])
    n.on_reset(None)                                    # a reset forgets the waiting scan too
    assert not n._unplaced


def test_a_map_the_strip_rule_cannot_search_leaves_it_without_verdicts(monkeypatch):
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn', warnings.append)
    n = strip_node(monkeypatch, strip_min_points=5)
    empty = wall_map()
    empty.data = [0] * len(empty.data)                # no obstacle to match against
    n.on_map(empty)
    assert n._strip.matcher is None
    assert any('cannot search this map' in w for w in warnings)
    n.on_scan(scan_msg(1.0))
    n.on_pose(pose_msg(1.0, TRUTH))
    assert n.strips == [None]


def test_while_settling_the_strip_grows_but_gives_no_verdict(monkeypatch):
    n = strip_node(monkeypatch, settle_readings=2)
    for stamp in (1.0, 1.5, 2.0):
        n.on_scan(scan_msg(stamp))
        n.on_pose(pose_msg(stamp, TRUTH))
    # Rule 9 ignores settling readings: no verdict (no search) for them, but their scans
    # are in the strip the first settled reading is judged on.
    assert n.strips == [None, None, False]
    assert len(n._strip._scans) == 3
