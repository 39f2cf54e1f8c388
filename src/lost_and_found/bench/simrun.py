"""The simulated graph of a benchmark: sim.launch (and the package) on any map, plus a bench node
that watches the truth and the localizer, drives, teleports and kidnaps.

All times are sim seconds (``/clock``); every wait also has a wall-clock deadline, so a stuck
graph ends the suite with an error instead of hanging it.
"""
import os
import threading

import yaml

from lost_and_found.bench.graph import GraphError, RosGraph

#: Covariance of a person's rviz "2D Pose Estimate" (amcl's initial_cov defaults): 0.5 m, 15 deg.
RVIZ_COVARIANCE = (0.25, 0.25, 0.06853891945200942)
#: Wall seconds granted per sim second waited, plus a constant: generous, since the sim may run
#: slower than real time on a loaded machine; only a stuck graph should ever hit it.
WALL_PER_SIM = 4.0
WALL_SLACK = 60.0
#: Sim seconds between an aborted goal and the next one.
ABORT_PAUSE = 1.0
#: The node whose fixes on initialpose the recovery suite judges (``--panorama``).
PANORAMA_NODE = '/panorama_localizer'


def write_sim_params(path, start_pose, laser_no_return=None):
    """Write a sim.launch ``sim_params`` file that starts the robot (and amcl) at ``start_pose``.

    Any map works: nothing but the start pose is needed from a scenario. ``laser_no_return``
    (``'inf'`` or ``'nan'``; None keeps config/sim_world.yaml's) sets how the simulated laser
    reports beams without a valid range.
    """
    x, y, yaw = (float(v) for v in start_pose)
    params = {
        'sim_world': {'start_pose': [x, y, yaw]},
        'sim_localizer': {'initial_pose_x': x, 'initial_pose_y': y, 'initial_pose_a': yaw},
    }
    if laser_no_return is not None:
        params['sim_world']['laser'] = {'no_return': laser_no_return}
    with open(path, 'w') as stream:
        stream.write('# Written by the lost_and_found bench: the start pose of this run.\n')
        yaml.safe_dump(params, stream, default_flow_style=None)
    return path


def sim_launch_args(args, params, world_map, nav_map, navigator):
    """sim.launch's arguments for the bench's command line ``args``: the maps, the
    ``sim_params`` file ``params``, the speed, the particles, the seed, the navigator, the tags
    and, with ``--localizer-config``, the amcl stand-in's YAML."""
    launch_args = fiducial_launch_args(args.fiducials)
    launch_args.update({
        'map_file': args.map, 'world_map_file': world_map, 'nav_map_file': nav_map,
        'sim_params': params, 'speed': args.speed, 'particles': args.particles,
        'min_particles': min(500, args.particles), 'seed': args.seed,
        'navigator': 'true' if navigator else 'false'})
    if getattr(args, 'localizer_config', None):
        launch_args['sim_localizer_config'] = args.localizer_config
    return launch_args


def fiducial_launch_args(fiducials):
    """The ``use_fiducials`` and ``fiducial_map`` launch arguments (sim.launch and
    lost_and_found.launch) for a fiducial map YAML, or for none (None or '').

    roslaunch keeps an argument's default when given ``name:=`` with nothing after it, so a
    world without tags is ``use_fiducials:=false``, not an empty ``fiducial_map``.
    """
    if not fiducials:
        return {'use_fiducials': 'false'}
    return {'use_fiducials': 'true', 'fiducial_map': fiducials}


def covariance36(var_x, var_y, var_yaw):
    """A 36-value row-major covariance with these variances on the diagonal."""
    cov = [0.0] * 36
    cov[0], cov[7], cov[35] = var_x, var_y, var_yaw
    return cov


def pose_entry(msg):
    """(t, x, y, yaw, var_x, var_y, cov_xy, var_yaw) of a PoseWithCovarianceStamped (amcl_pose).
    """
    from lost_and_found.nodes.conversions import yaw_from_quaternion
    p, c = msg.pose.pose, msg.pose.covariance
    return (msg.header.stamp.to_sec(), p.position.x, p.position.y,
            yaw_from_quaternion(p.orientation), c[0], c[7], c[1], c[35])


class ScanMisses:
    """Adds the scan miss fraction to recorded amcl poses, as the lost_detector node computes it,
    the two kinds of misses it weighs (core/scan_agreement.py), the two kinds at every
    ``min_range`` of :data:`~lost_and_found.bench.detectors.MIN_RANGES`, without and with the
    open beams (``scan_check/open_beams``), and the through span at the checker's own
    ``min_range`` with its own beams and, as a pair, without and with the open beams.

    The caller owns the list of readings (``(t, x, y, yaw, ...8 values)``) and calls
    :meth:`on_pose` / :meth:`on_scan` under its own lock; a reading whose scan has not arrived
    yet gets None and is completed when the scan comes (the two come on different connections).
    :attr:`returns` keeps each reading's scan itself, as its returns in the robot's base frame
    (:meth:`~lost_and_found.core.scan_agreement.ScanChecker.returns_at`), with the odometry
    pose of its instant, by the reading's index, so that a rule reading several scans
    together (placed by odometry) can be replayed on the run.

    Args:
        detector_config: the lost_detector YAML whose ``scan_check`` numbers to use.
        map_path: map_server YAML of the map (None: set it later with :meth:`set_map`).
        tf_buffer: a tf2 buffer for the laser mount (base_footprint -> the scan's frame).
    """

    def __init__(self, detector_config, map_path, tf_buffer):
        """No scans yet; the mount is looked up on the first scan."""
        from lost_and_found.bench.detectors import load_detector_config
        from lost_and_found.core.scan_agreement import ScanChecker
        self.checker = ScanChecker.from_config(load_detector_config(detector_config))
        self._tf_buffer = tf_buffer
        self._mount = None
        self._awaiting = []             # indices of readings whose scan has not come yet
        self.returns = {}               # reading index -> ((n, 2) returns, odometry pose)
        if map_path:
            self.set_map(map_path)

    def set_map(self, map_path):
        """Use the map at ``map_path``; forget the scans, the mount and pending readings."""
        from lost_and_found.bench.detectors import detector_map
        from lost_and_found.sim.gridmap import load_map
        self.checker.distance_map = detector_map(load_map(map_path))
        self.checker.clear_scans()
        self._mount = None
        self._awaiting = []

    def on_scan(self, msg, readings):
        """Keep a LaserScan; complete the readings that were waiting for it."""
        from lost_and_found.nodes.conversions import laser_mount_from_transform, scan_from_msg
        if self._mount is None:
            import rospy
            import tf2_ros
            try:
                t = self._tf_buffer.lookup_transform('base_footprint', msg.header.frame_id,
                                                     rospy.Time(0))
                self._mount = laser_mount_from_transform(t.transform)
            except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                    tf2_ros.ExtrapolationException, ValueError):
                return
        self.checker.add_scan(msg.header.stamp.to_sec(), scan_from_msg(msg), self._mount)
        for index in list(self._awaiting):
            entry = readings[index]
            values = self._values(entry)
            if values[0] is not None or not self.checker.waiting:
                readings[index] = entry[:8] + values
                self._awaiting.remove(index)
                self._keep_returns(index, entry[0])

    def on_pose(self, entry, readings):
        """Append ``entry`` (8 values) with its miss fraction, the through and short miss
        fractions it weighs, those at every candidate ``min_range`` without and with open
        beams, and its through spans (Nones for now, or for good; :meth:`_values`)."""
        values = self._values(entry)
        if values[0] is None and self.checker.waiting:
            self._awaiting.append(len(readings))
        else:
            self._keep_returns(len(readings), entry[0])
        readings.append(tuple(entry[:8]) + values)

    def _keep_returns(self, index, stamp):
        """Keep the returns of the scan of reading ``index`` (stamped ``stamp``), if any, with
        the odometry pose ``(x, y, yaw)`` of that instant (None when tf has none)."""
        returns = self.checker.returns_at(stamp)
        if returns is not None:
            self.returns[index] = (returns, self._odometry(stamp))

    def _odometry(self, stamp):
        """odom -> base_footprint at ``stamp`` as ``(x, y, yaw)``, or None."""
        import rospy
        import tf2_ros
        from lost_and_found.nodes.conversions import planar_pose
        try:
            t = self._tf_buffer.lookup_transform('odom', 'base_footprint',
                                                 rospy.Time.from_sec(stamp))
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException):
            return None
        return planar_pose(t.transform)

    def _values(self, entry):
        """(miss, through, short, near, open, span, spans) of a reading: ``near`` and
        ``open`` hold ``(through, short)`` or None per
        :data:`~lost_and_found.bench.detectors.MIN_RANGES`, without and with open beams,
        ``span`` is the checker's through span (measured with its own numbers in one pass,
        :meth:`~lost_and_found.core.scan_agreement.ScanChecker.measure_with_span`), ``spans``
        the through spans at its ``min_range`` without and with the open beams (either None
        where that measure has none), so that a detector file with the other ``open_beams``
        can replay the burst rule too; None for all seven while its scan has not come (or
        never will)."""
        return measure_reading(self.checker, entry)


def measure_reading(checker, entry):
    """The scan values :class:`ScanMisses` records for a reading ``entry`` (``(t, x, y, yaw,
    ...)``) with ``checker`` (a ScanChecker holding the map and the reading's scan): ``(miss,
    through, short, near, open, span, spans)`` as :meth:`ScanMisses._values` says. Also used
    to measure recorded runs again (tools/remeasure_scan.py)."""
    from lost_and_found.bench.detectors import MIN_RANGES
    from lost_and_found.core.scan_agreement import weighted_miss
    own = checker.measure_with_span(entry[0], entry[1:4])
    fractions, span = (None, None) if own is None else (own[:2], own[2])
    waiting, reason = checker.waiting, checker.reason
    if fractions is None and waiting:
        return (None,) * 7
    # The other beam setting at the checker's min_range, with its span, in one pass too.
    measured = {checker.open_beams: own, not checker.open_beams: checker.measure_with_span(
        entry[0], entry[1:4], not checker.open_beams)}

    def at(min_range, open_beams):
        # At the checker's own min_range both are measured above already.
        if min_range == checker.min_range:
            values = measured[open_beams]
            return None if values is None else values[:2]
        return checker.measure(entry[0], entry[1:4], min_range, open_beams)
    near = tuple(at(m, False) for m in MIN_RANGES)
    open_ = tuple(at(m, True) for m in MIN_RANGES)
    checker.waiting, checker.reason = waiting, reason
    spans = tuple(None if measured[beams] is None else measured[beams][2]
                  for beams in (False, True))
    if fractions is None:
        return None, None, None, near, open_, None, spans
    return (weighted_miss(fractions[0], fractions[1], checker.short_weight),) + \
        tuple(fractions) + (near, open_, span, spans)


class SimSession:
    """A running simulated graph and the bench node watching it.

    Args:
        ctx: the suite's BenchContext (map, fiducials, speed, particles, seed, log folder).
        start_pose: where the robot starts.
        name: a name for the log files.
        world_map: map_server YAML of the world sim_world runs in (default: the map itself;
            see bench/clutter.py).
        nav_map: map_server YAML sim_navigator plans on (default: ``world_map``; see
            ``nav_map_file`` in launch/sim.launch).
    """

    def __init__(self, ctx, start_pose, name='sim', world_map=None, nav_map=None):
        """Nothing runs until :meth:`start`."""
        self.ctx = ctx
        self.world_map = world_map or ctx.args.map
        self.nav_map = nav_map or self.world_map
        self.start_pose = start_pose
        self.name = name
        self.graph = RosGraph(os.path.join(ctx.log_dir, name))
        self.lock = threading.Lock()
        self.truth = None                 # (t, x, y, yaw)
        self.truth_log = []               # (t, x, y, yaw), every message
        self.truth_times = []             # the stamps of truth_log, for searching it
        # (t, x, y, yaw, var_x, var_y, cov_xy, var_yaw, scan miss fraction, through and short
        # miss fractions; the last three None without a scan feature)
        self.readings = []
        self.states = []                  # (t, state name)
        self.collisions = 0
        self.wheel_raised = []            # sim times of RAISED wheel edges
        self.hints = []                   # (stamp, bearing, share) of fiducial_localizer's hints
        self.panorama_fixes = []          # (stamp, x, y, yaw) of panorama_localizer's fixes
        self._saved_goal = None           # the recovery node's saved goal (x, y) or None
        self.rospy = None
        self._package = None
        self._misses = None

    # ------------------------------------------------------------------ life cycle

    def start(self, navigator=True):
        """Start the master, sim.launch on the map, and the bench node; wait for the clock."""
        ctx, args = self.ctx, self.ctx.args
        self.graph.start()
        params = write_sim_params(os.path.join(self.graph.log_dir, 'sim_params.yaml'),
                                  self.start_pose, args.laser_no_return)
        self.graph.launch('sim', 'lost_and_found', 'sim.launch', sim_launch_args(
            args, params, self.world_map, self.nav_map, navigator))
        self.graph.wait_for(self._use_sim_time_set, 60, '/use_sim_time from sim.launch')
        rospy = self.rospy = self.graph.init_node('bench')
        import tf2_ros
        self._tf_buffer = tf2_ros.Buffer(rospy.Duration(30.0))
        self._tf_listener = tf2_ros.TransformListener(self._tf_buffer)
        self._misses = ScanMisses(args.detector_config, args.map, self._tf_buffer)
        self._subscribe()
        self.graph.wait_for(lambda: rospy.get_time() > 0, 120, '/clock from sim_world')
        self.graph.wait_for(lambda: self.truth is not None, 60, 'the ground truth')
        ctx.progress('graph up (%s)' % self.graph.uri)
        return self

    def _use_sim_time_set(self):
        import rosgraph
        try:
            return bool(rosgraph.Master('/bench_probe', master_uri=self.graph.uri).getParam(
                '/use_sim_time'))
        except Exception:  # noqa: B902 - not set yet (the master answers with a fault)
            return False

    def start_package(self, strategy='spiral', extra=None):
        """Start lost_and_found.launch, wired as demo.launch wires it; wait until IDLE."""
        args = dict(fiducial_launch_args(self.ctx.args.fiducials), cmd_vel_topic='cmd_vel',
                    strategy=strategy)
        args.update(extra or {})
        self._package = self.graph.launch('package_%s' % strategy, 'lost_and_found',
                                          'lost_and_found.launch', args)
        return self._package

    def stop_package(self):
        """Stop the package launched by :meth:`start_package`."""
        if self._package is not None:
            self.graph.stop(self._package)
            self._package = None
        with self.lock:
            self._saved_goal = None       # its recovery node, and what it kept, are gone

    def shutdown(self):
        """Stop everything."""
        if self.rospy is not None:
            self.rospy.signal_shutdown('bench done')
        self.graph.shutdown()

    def __enter__(self):
        """Start (see :meth:`start`)."""
        return self

    def __exit__(self, *exc):
        """Stop everything, also on errors."""
        self.shutdown()
        return False

    # ------------------------------------------------------------------ watching

    def _subscribe(self):
        rospy = self.rospy
        from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
        from kobuki_msgs.msg import WheelDropEvent
        from std_msgs.msg import String, UInt32
        rospy.Subscriber('/sim_world/ground_truth', PoseStamped, self._on_truth,
                         queue_size=50)
        from sensor_msgs.msg import LaserScan
        rospy.Subscriber('/scan', LaserScan, self._on_scan, queue_size=20)
        rospy.Subscriber('/amcl_pose', PoseWithCovarianceStamped, self._on_pose, queue_size=50)
        rospy.Subscriber('/lost_service/state', String, self._on_state, queue_size=50)
        rospy.Subscriber('/sim_world/collisions', UInt32, self._on_collisions, queue_size=5)
        rospy.Subscriber('/mobile_base/events/wheel_drop', WheelDropEvent, self._on_wheel,
                         queue_size=20)
        rospy.Subscriber('/lost_and_found/saved_goal', PoseStamped, self._on_saved_goal,
                         queue_size=5)
        from lost_and_found.msg import SearchHint
        rospy.Subscriber('/fiducial_localizer/search_hint', SearchHint, self._on_hint,
                         queue_size=20)
        rospy.Subscriber('/initialpose', PoseWithCovarianceStamped, self._on_initialpose,
                         queue_size=20)

    def _on_truth(self, msg):
        from lost_and_found.nodes.conversions import yaw_from_quaternion
        p = msg.pose
        entry = (msg.header.stamp.to_sec(), p.position.x, p.position.y,
                 yaw_from_quaternion(p.orientation))
        with self.lock:
            self.truth = entry
            self.truth_log.append(entry)
            self.truth_times.append(entry[0])

    def _on_scan(self, msg):
        with self.lock:
            self._misses.on_scan(msg, self.readings)

    def _on_pose(self, msg):
        entry = pose_entry(msg)
        with self.lock:
            self._misses.on_pose(entry, self.readings)

    def reading_returns(self):
        """Each reading's scan as its returns in the base frame (an ``(n, 2)`` array, m) and
        the odometry pose ``(x, y, yaw)`` of its instant (or None), or None where the reading
        has no scan, in the order of :attr:`readings`; call under :attr:`lock`."""
        returns = self._misses.returns if self._misses is not None else {}
        return [returns.get(i) for i in range(len(self.readings))]

    def _on_state(self, msg):
        with self.lock:
            self.states.append((self.rospy.get_time(), msg.data))

    def _on_collisions(self, msg):
        with self.lock:
            self.collisions = msg.data

    def _on_wheel(self, msg):
        if msg.state == msg.RAISED:
            with self.lock:
                self.wheel_raised.append(self.rospy.get_time())

    def _on_hint(self, msg):
        if msg.found:
            with self.lock:
                self.hints.append((msg.header.stamp.to_sec(), msg.bearing, msg.share))

    def _on_initialpose(self, msg):
        if msg._connection_header.get('callerid') == PANORAMA_NODE:
            from lost_and_found.nodes.conversions import yaw_from_quaternion
            p = msg.pose.pose
            with self.lock:
                self.panorama_fixes.append((msg.header.stamp.to_sec(), p.position.x,
                                            p.position.y, yaw_from_quaternion(p.orientation)))

    def panorama_fixes_between(self, start, end):
        """panorama_localizer's fixes stamped in [start, end] (sim s): (stamp, x, y, yaw)
        each, in the order they came."""
        with self.lock:
            return [f for f in self.panorama_fixes if start <= f[0] <= end]

    def hints_between(self, start, end):
        """fiducial_localizer's search hints stamped in [start, end] (sim s): (stamp, bearing,
        share) each, in the order they came."""
        with self.lock:
            return [h for h in self.hints if start <= h[0] <= end]

    def _on_saved_goal(self, msg):
        with self.lock:
            self._saved_goal = (msg.pose.position.x, msg.pose.position.y) \
                if msg.header.frame_id else None

    def saved_goal(self):
        """The recovery node's saved goal (x, y), or None when it keeps none."""
        with self.lock:
            return self._saved_goal

    def now(self):
        """Sim time (s)."""
        return self.rospy.get_time()

    def state(self):
        """The latest lost_service state name, or None."""
        with self.lock:
            return self.states[-1][1] if self.states else None

    def truth_pose(self):
        """The latest ground truth (x, y, yaw)."""
        return self.truth_sample()[1]

    def truth_sample(self):
        """The latest ground truth with its stamp: (stamp, (x, y, yaw))."""
        with self.lock:
            return self.truth[0], self.truth[1:]

    def estimate(self, base_frame='base_footprint'):
        """The localizer's belief now: (x, y, yaw) of the base in the map frame from tf, or None.
        """
        sample = self.estimate_sample(base_frame)
        return None if sample is None else sample[1]

    def estimate_sample(self, base_frame='base_footprint'):
        """The localizer's latest belief on tf with its stamp: (stamp, (x, y, yaw)), or None.

        The stamp is the latest time at which the whole map -> base chain is known (the
        newest odometry this node has): the instant the belief is about, which may lag the
        newest ground truth (:meth:`truth_at` gives the truth of that instant).
        """
        import tf2_ros
        from lost_and_found.nodes.conversions import planar_pose
        try:
            t = self._tf_buffer.lookup_transform('map', base_frame, self.rospy.Time(0))
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException):
            return None
        return t.header.stamp.to_sec(), planar_pose(t.transform)

    def truth_at(self, stamp):
        """The ground truth (x, y, yaw) stamped nearest ``stamp`` (sim s), or None before any."""
        from lost_and_found.bench.detectors import nearest_index
        with self.lock:
            if not self.truth_log:
                return None
            return self.truth_log[nearest_index(self.truth_times, stamp)][1:]

    def subscribed(self, node, topic):
        """True when ``node`` subscribes to ``topic`` (asked of the master)."""
        import rosgraph
        try:
            _, subscribers, _ = rosgraph.Master('/bench').getSystemState()
        except Exception:  # noqa: B902 - the master is busy or gone: not yet
            return False
        return any(name == topic and node in nodes for name, nodes in subscribers)

    def latest_estimate(self):
        """The latest amcl_pose (x, y, yaw), or None."""
        with self.lock:
            return self.readings[-1][1:4] if self.readings else None

    # ------------------------------------------------------------------ acting

    def wait_sim(self, seconds, what, until=None, tick=None):
        """Wait ``seconds`` of sim time, or until ``until()`` holds; call ``tick()`` meanwhile.

        Returns:
            True when ``until`` held, False when the time ran out.
        """
        end = self.now() + seconds
        held = [False]

        def done():
            if tick is not None:
                tick()
            if until is not None and until():
                held[0] = True
                return True
            return self.now() >= end
        self.graph.wait_for(done, WALL_PER_SIM * seconds + WALL_SLACK, what)
        return held[0]

    def teleport(self, pose):
        """Move the robot silently (sim_world ~teleport)."""
        from lost_and_found.srv import Teleport
        from geometry_msgs.msg import Pose2D
        service = self.rospy.ServiceProxy('/sim_world/teleport', Teleport)
        service.wait_for_service(30.0)
        response = service(Pose2D(x=pose[0], y=pose[1], theta=pose[2]))
        if not response.success:
            raise GraphError('teleport to %r refused: %s' % (pose, response.message))

    def clear_costmaps(self):
        """Have sim_navigator forget its remembered returns (move_base/clear_costmaps): after
        a teleport that resets a trial, what it remembered in the odometry frame lies around
        the new place (the teleport is the bench's own, not an event to live through)."""
        from std_srvs.srv import Empty
        service = self.rospy.ServiceProxy('/move_base/clear_costmaps', Empty)
        service.wait_for_service(30.0)
        service()

    def kidnap(self, pose, hold=0.0):
        """Lift the robot now and put it down at ``pose`` (sim_world ~kidnap)."""
        from lost_and_found.srv import Kidnap
        from geometry_msgs.msg import Pose2D
        service = self.rospy.ServiceProxy('/sim_world/kidnap', Kidnap)
        service.wait_for_service(30.0)
        response = service(pose=Pose2D(x=pose[0], y=pose[1], theta=pose[2]), random=False,
                           min_distance=0.0, hold=hold)
        if not response.success:
            raise GraphError('kidnap to %r refused: %s' % (pose, response.message))

    def initial_pose(self, pose, covariance=RVIZ_COVARIANCE):
        """Publish ``/initialpose`` at ``pose`` (as a person with rviz would), stamped now."""
        from geometry_msgs.msg import PoseWithCovarianceStamped
        from lost_and_found.nodes.conversions import pose_with_covariance
        if not hasattr(self, '_initial_pub'):
            self._initial_pub = self.rospy.Publisher('/initialpose', PoseWithCovarianceStamped,
                                                     queue_size=1)
            self.graph.wait_for(lambda: self._initial_pub.get_num_connections() > 0, 30,
                                'a subscriber on /initialpose')
        self._initial_pub.publish(pose_with_covariance(
            pose[0], pose[1], pose[2], covariance36(*covariance), 'map', self.rospy.Time.now()))


class Driver:
    """Keeps the robot driving to random goals through move_base (the navigator).

    Call :meth:`tick` often (e.g. from :meth:`SimSession.wait_sim`); it sends a new goal
    whenever none is active. Goals are free poses of ``free_space`` drawn from ``rng``.
    """

    def __init__(self, session, free_space, rng, min_distance=3.0, max_distance=12.0):
        """Connect the move_base action client (waits up to 60 s wall for it)."""
        from move_base_msgs.msg import MoveBaseAction

        from lost_and_found.nodes.goal_client import GoalClient
        self.session = session
        self.free_space = free_space
        self.rng = rng
        self.min_distance, self.max_distance = min_distance, max_distance
        self.client = GoalClient('/move_base', MoveBaseAction)
        if not self.client.wait_for_server(session.rospy.Duration(60.0)):
            raise GraphError('no move_base action server after 60 s')
        self.goal = None
        self.goals_sent = 0
        self.aborted = 0
        self._next_send = 0.0
        self._cancelled_at = session.rospy.Time(0)

    def send(self, pose):
        """Send a goal at ``pose`` (x, y, yaw) in the map frame."""
        from lost_and_found.nodes.lost_and_found import move_base_goal_from_leg
        # A goal stamped like the last cancel would be cancelled by it.
        self.session.graph.wait_for(lambda: self.session.rospy.Time.now() > self._cancelled_at,
                                    WALL_SLACK, 'the clock to move past the last cancel')
        self.goal = pose
        self.goals_sent += 1
        self.client.send_goal(move_base_goal_from_leg(pose, 'map', self.session.rospy.Time.now()))

    def active(self):
        """True while the last goal is pending or active."""
        from actionlib_msgs.msg import GoalStatus
        return self.goal is not None and \
            self.client.get_state() in (GoalStatus.PENDING, GoalStatus.ACTIVE)

    def tick(self):
        """Send a new random goal when the last one ended."""
        from actionlib_msgs.msg import GoalStatus
        if self.active():
            return
        now = self.session.now()
        if now < self._next_send:
            return
        if self.goal is not None and self.client.get_state() == GoalStatus.ABORTED:
            self.aborted += 1
            # A navigator that cannot plan from a wrong estimate aborts at once: do not
            # flood it, give it a moment before the next goal.
            self._next_send = now + ABORT_PAUSE
            self.goal = None
            return
        here = self.session.truth_pose()
        self.send(self.free_space.sample(self.rng, here[:2], self.min_distance,
                                         self.max_distance))

    def cancel(self):
        """Cancel every goal (ours and anyone's) stamped up to now.

        By stamp, not "all": the cancel and a goal sent after it travel on different topics,
        and a cancel-all that arrives late would also cancel the newer goal.
        """
        self._cancelled_at = self.session.rospy.Time.now()
        self.client.cancel_goals_at_and_before_time(self._cancelled_at)
        self.goal = None
