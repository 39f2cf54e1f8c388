"""lost_and_found.sim.particle_filter: amcl's particle filter on a generated L-shaped room.

Every test seeds its generator. The room is asymmetric (an L with furniture) so that global
localization has one answer; the laser is simulated by a small vectorised ray caster here.
"""
import dataclasses
import math

import numpy as np
import pytest

from lost_and_found.core.config import ConfigError
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.particle_filter import (
    ParticleFilter, Scan, SimLocalizerConfig, circular_stats, cluster_labels, kld_sample_limit,
    wrap_angle)

RESOLUTION = 0.05
ORIGIN = (-1.0, -0.5, 0.0)
#: The room's outline (map frame): an L, the 10 m x 8 m hull without its top-right corner.
OUTLINE = [(-1.0, -0.5), (9.0, -0.5), (9.0, 4.0), (5.0, 4.0), (5.0, 7.5), (-1.0, 7.5)]
#: Solid furniture boxes (x0, y0, x1, y1).
FURNITURE = [
    (1.0, 1.0, 2.2, 1.6),      # table
    (6.5, 0.5, 6.9, 0.9),      # column
    (-0.9, 5.0, -0.4, 6.5),    # shelf against the left wall
    (3.0, 5.5, 3.3, 7.4),      # partition hanging from the top wall
]
#: A scripted run through the room (map frame), starting at the first waypoint facing +x.
WAYPOINTS = [(0.0, 0.0), (4.5, 0.0), (4.5, 3.0), (1.0, 3.0), (1.0, 5.5), (2.5, 5.0)]


def l_room():
    """The L-shaped room: 0.1 m walls, furniture, unknown outside (as a SLAM map has)."""
    rows, cols = int(round(8.0 / RESOLUTION)) + 4, int(round(10.0 / RESOLUTION)) + 4
    origin = (ORIGIN[0] - 2 * RESOLUTION, ORIGIN[1] - 2 * RESOLUTION, 0.0)
    blank = GridMap.from_occupancy(np.zeros((rows, cols), dtype=bool), RESOLUTION, origin)
    cx, cy = blank.cell_center(*np.indices(blank.shape))
    (x0, y0), (x1, _), (_, yc), (xc, _), (_, y1) = OUTLINE[:5]
    inside = (cx > x0) & (cx < x1) & (cy > y0) & (cy < y1) & ~((cx > xc) & (cy > yc))
    grown = (cx > x0 - 0.1) & (cx < x1 + 0.1) & (cy > y0 - 0.1) & (cy < y1 + 0.1) & \
        ~((cx > xc + 0.1) & (cy > yc + 0.1))
    walls = grown & ~inside
    for bx0, by0, bx1, by1 in FURNITURE:
        walls |= (cx >= bx0) & (cx <= bx1) & (cy >= by0) & (cy <= by1)
    return GridMap(walls, inside & ~walls, RESOLUTION, origin)


GRID = l_room()


def cast(grid, pose, angles, range_max, rng=None, noise=0.01):
    """Ranges from ``pose`` along ``angles`` (robot frame); no return is +inf."""
    steps = np.arange(grid.resolution / 2, range_max, grid.resolution / 2)
    heading = pose[2] + np.asarray(angles)
    px = pose[0] + np.cos(heading)[:, None] * steps
    py = pose[1] + np.sin(heading)[:, None] * steps
    hit = grid.is_occupied(px, py)
    ranges = np.where(hit.any(axis=1), steps[np.argmax(hit, axis=1)], np.inf)
    if rng is not None:
        ranges = ranges + rng.normal(0.0, noise, ranges.shape)
    return ranges


def make_scan(pose, rng, n=180, fov=2 * math.pi, range_max=5.0):
    """A 360 deg (default) scan of GRID from the true pose."""
    angle_min = -fov / 2
    increment = fov / n
    angles = angle_min + increment * np.arange(n)
    return Scan(cast(GRID, pose, angles, range_max, rng), angle_min, increment, 0.1, range_max)


def compose(pose, delta):
    """pose (+) delta, delta in the pose's frame."""
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return (pose[0] + c * delta[0] - s * delta[1], pose[1] + s * delta[0] + c * delta[1],
            float(wrap_angle(pose[2] + delta[2])))


def scripted_run(rng):
    """True poses every 0.1 s along WAYPOINTS: turn at 1 rad/s, drive at 0.3 m/s."""
    pose = (WAYPOINTS[0][0], WAYPOINTS[0][1], 0.0)
    poses = [pose]
    for wx, wy in WAYPOINTS[1:]:
        while True:
            turn = float(wrap_angle(math.atan2(wy - pose[1], wx - pose[0]) - pose[2]))
            if abs(turn) < 1e-9:
                break
            pose = compose(pose, (0.0, 0.0, max(-0.1, min(0.1, turn))))
            poses.append(pose)
        while math.hypot(wx - pose[0], wy - pose[1]) > 1e-9:
            pose = compose(pose, (min(0.03, math.hypot(wx - pose[0], wy - pose[1])), 0.0, 0.0))
            poses.append(pose)
    return poses


def odometry(poses, rng):
    """Noisy odometry of true poses: 3 % translation and 2 % rotation noise per step."""
    odom = [(0.0, 0.0, 0.0)]
    for a, b in zip(poses, poses[1:]):
        c, s = math.cos(a[2]), math.sin(a[2])
        dx, dy = b[0] - a[0], b[1] - a[1]
        delta = np.array([c * dx + s * dy, -s * dx + c * dy, float(wrap_angle(b[2] - a[2]))])
        delta[:2] *= 1.0 + rng.normal(0.0, 0.03)
        delta[2] *= 1.0 + rng.normal(0.0, 0.02)
        odom.append(compose(odom[-1], delta))
    return odom


def pose_error(estimate, truth):
    """(distance, |yaw difference|) between an estimate and a true pose."""
    return (math.hypot(estimate.x - truth[0], estimate.y - truth[1]),
            abs(float(wrap_angle(estimate.yaw - truth[2]))))


def make_filter(seed=1, **overrides):
    """A filter on GRID initialised at the run's start (amcl's TurtleBot2 defaults)."""
    config = SimLocalizerConfig(**dict(dict(initial_pose_x=WAYPOINTS[0][0],
                                            initial_pose_y=WAYPOINTS[0][1]), **overrides))
    config.validate()
    return ParticleFilter(config, GRID, np.random.default_rng(seed))


def run(pf, poses, odom, rng, stop=None):
    """Feed every scan of a run; return [(step, estimate error)] after each publish."""
    errors = []
    for step, (truth, od) in enumerate(zip(poses, odom)):
        if pf.update(od, make_scan(truth, rng)).publish:
            errors.append((step, pose_error(pf.estimate(), truth)))
            if stop and stop(errors):
                break
    return errors


def test_tracking_a_scripted_run_stays_within_tolerance():
    rng = np.random.default_rng(7)
    poses = scripted_run(rng)
    pf = make_filter(seed=3)
    errors = run(pf, poses, odometry(poses, rng), rng)
    assert len(errors) > 30                      # it really updated along the way
    worst_d = max(e[1][0] for e in errors)
    worst_a = max(e[1][1] for e in errors)
    assert worst_d < 0.3 and worst_a < 0.2, (worst_d, worst_a)
    # Tracking keeps KLD near its floor.
    assert pf.count < 1000


def test_global_localization_converges_like_amcl():
    """From a uniform cloud many seeded runs lock onto the robot within 50 updates.

    amcl's likelihood field with 2000 particles and its tiny ``diff`` noise does not always
    find the robot (it can settle on a similar-looking place and, without recovery, stay
    there): that is what lost_and_found exists for. Half the runs converging is amcl-like.
    """
    converged = 0
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        poses = scripted_run(rng)
        pf = make_filter(seed=seed)
        pf.global_localization()
        assert pf.count == pf.config.max_particles
        cov = pf.estimate().covariance
        assert cov[0, 0] > 4.0 and cov[1, 1] > 2.0 and cov[5, 5] > 3.0   # huge
        errors = run(pf, poses, odometry(poses, rng), rng, stop=lambda e: len(e) >= 50)
        # The first update after global_localization keeps it huge (amcl's likelihood).
        assert errors[0][0] == 0
        if all(d < 0.3 and a < 0.2 for _, (d, a) in errors[-10:]):
            converged += 1
            cov = pf.estimate().covariance
            assert math.sqrt(cov[0, 0] + cov[1, 1]) < 0.3 and cov[5, 5] < 0.05
            assert pf.count < 1000                # KLD dropped from max_particles
    assert converged >= 3


def test_global_localization_first_update_keeps_the_covariance_huge():
    rng = np.random.default_rng(3)
    pf = make_filter(seed=3)
    pf.global_localization()
    assert pf.update((0.0, 0.0, 0.0), make_scan((0.0, 0.0, 0.0), rng)).publish
    cov = pf.estimate().covariance
    assert math.sqrt(cov[0, 0] + cov[1, 1]) > 1.0 and cov[5, 5] > 0.5


def test_product_model_tracks_and_is_sharper():
    rng = np.random.default_rng(7)
    poses = scripted_run(rng)[:200]
    pf = make_filter(seed=3, laser_model_combination='product')
    errors = run(pf, poses, odometry(poses, rng), rng)
    assert max(d for _, (d, _) in errors) < 0.3 and max(a for _, (_, a) in errors) < 0.2
    truth = poses[-1]
    scan = make_scan(truth, rng)
    near = ([truth[0], truth[0] + 0.2], [truth[1], truth[1]], [truth[2], truth[2]])
    gaps = [np.diff(make_filter(laser_model_combination=m).log_likelihood(scan, *map(
        np.array, near)))[0] for m in ('amcl', 'product')]
    assert gaps[1] < gaps[0] < 0.0


def test_first_scan_updates_then_only_after_motion():
    rng = np.random.default_rng(2)
    pose = (0.0, 0.0, 0.0)
    scan = make_scan(pose, rng)
    pf = make_filter()
    first = pf.update((0.0, 0.0, 0.0), scan)
    assert first.updated and first.publish        # amcl's forced first update
    # No motion, or motion below update_min_d / update_min_a: nothing happens.
    for odom in [(0.0, 0.0, 0.0), (0.2, 0.0, 0.0), (0.0, -0.24, 0.0), (0.0, 0.0, 0.19),
                 (0.2, 0.2, 0.1)]:                # amcl tests each axis: 0.28 m diagonal is not
        assert pf.update(odom, scan) == (False, False), odom
    assert pf.updates == 1
    # request_nomotion_update: exactly one update without motion.
    pf.request_nomotion_update()
    assert pf.update((0.0, 0.0, 0.0), scan).publish
    assert not pf.update((0.0, 0.0, 0.0), scan).updated
    # Enough translation or rotation updates.
    assert pf.update((0.26, 0.0, 0.0), scan).updated
    assert pf.update((0.26, 0.0, -0.21), scan).updated
    assert pf.updates == 4


def test_initialize_and_global_localization_force_the_next_update():
    rng = np.random.default_rng(4)
    scan = make_scan((0.0, 0.0, 0.0), rng)
    pf = make_filter()
    assert pf.update((1.0, 2.0, 0.5), scan).publish
    pf.initialize(0.1, 0.0, 0.0, (0.01, 0.01, 0.01))
    assert pf.update((1.0, 2.0, 0.5), scan).publish
    pf.global_localization()
    assert pf.update((1.0, 2.0, 0.5), scan).publish
    assert not pf.update((1.0, 2.0, 0.5), scan).updated


def test_resample_interval_delays_publication():
    rng = np.random.default_rng(4)
    scan = make_scan((0.0, 0.0, 0.0), rng)
    pf = make_filter(resample_interval=2, update_min_d=0.0, update_min_a=0.0)
    assert pf.update((0.0, 0.0, 0.0), scan) == (True, True)   # forced
    published = [pf.update((0.01 * i, 0.0, 0.0), scan).publish for i in range(1, 5)]
    assert published == [True, False, True, False]


def test_motion_model_without_noise_moves_each_particle_in_its_own_frame():
    pf = make_filter(odom_alpha1=0.0, odom_alpha2=0.0, odom_alpha3=0.0, odom_alpha4=0.0)
    pf.x, pf.y, pf.yaw = np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([0.0, math.pi / 2])
    pf.weights = np.array([0.5, 0.5])
    # Odometry: start at yaw 0.3, drive 1 m straight ahead, turn +0.2.
    old = (5.0, 5.0, 0.3)
    new = (5.0 + math.cos(0.3), 5.0 + math.sin(0.3), 0.5)
    pf._apply_motion(old, new)
    np.testing.assert_allclose(pf.x, [1.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(pf.y, [0.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(pf.yaw, [0.2, math.pi / 2 + 0.2], atol=1e-12)


def test_motion_noise_grows_with_alphas():
    spreads = []
    for alpha in (0.05, 0.2, 0.8):
        pf = make_filter(initial_cov_xx=0.0, initial_cov_yy=0.0, initial_cov_aa=0.0,
                         odom_alpha1=alpha, odom_alpha2=alpha, odom_alpha3=alpha,
                         odom_alpha4=alpha)
        pf._apply_motion((0.0, 0.0, 0.0), (1.0, 0.0, 0.5))
        spreads.append((np.std(pf.x), np.std(wrap_angle(pf.yaw - 0.5))))
    assert spreads[0][0] < spreads[1][0] < spreads[2][0]
    assert spreads[0][1] < spreads[1][1] < spreads[2][1]
    # amcl's diff model: translation sigma = alpha3 * 1^2 + alpha4 * 0.5^2 for alpha 0.2.
    assert spreads[1][0] == pytest.approx(0.25, rel=0.1)


def test_likelihood_prefers_the_true_pose_and_skips_unusable_beams():
    rng = np.random.default_rng(8)
    truth = (2.0, 3.0, 0.4)
    scan = make_scan(truth, rng)
    pf = make_filter(laser_model_combination='product')
    xs = np.array([truth[0], truth[0] + 0.3, truth[0], 30.0])
    ys = np.array([truth[1], truth[1], truth[1], 30.0])
    yaws = np.array([truth[2], truth[2], truth[2] + 0.3, 0.0])
    ll = pf.log_likelihood(scan, xs, ys, yaws)
    assert ll[0] > ll[1] and ll[0] > ll[2] and ll[1] > ll[3]
    # Far off the map every beam sees the capped distance: z_hit e^{-2^2/0.08} + z_rand/5.
    usable = np.isfinite(scan.ranges[pf.beam_indices(scan.ranges.size)]).sum()
    p_far = 0.95 * math.exp(-50.0) + 0.01
    assert ll[3] == pytest.approx(usable * math.log(p_far))
    # amcl's combination: log(1 + sum of p^3).
    ll_amcl = make_filter().log_likelihood(scan, xs, ys, yaws)
    assert ll_amcl[3] == pytest.approx(math.log1p(usable * p_far ** 3))
    assert ll_amcl[0] > ll_amcl[1] and ll_amcl[0] > ll_amcl[2] and ll_amcl[1] > ll_amcl[3]
    assert len(pf.beam_indices(scan.ranges.size)) == 30
    blind = Scan(np.full(180, np.inf), scan.angle_min, scan.angle_increment, 0.1, 5.0)
    assert np.all(pf.log_likelihood(blind, xs, ys, yaws) == 0.0)
    odd = np.array([np.nan, 5.0, 0.05, -1.0, 7.0])   # nan, max, below min, negative, beyond
    weird = Scan(odd, 0.0, 0.1, 0.1, 5.0)
    assert np.all(pf.log_likelihood(weird, xs, ys, yaws) == 0.0)


def test_laser_offset_is_applied():
    rng = np.random.default_rng(9)
    truth = (2.0, 3.0, 0.4)
    offset = (0.2, -0.1, math.pi)        # a laser mounted backwards, ahead of the base
    laser = compose(truth, offset)
    plain = make_scan(laser, rng)
    mounted = dataclasses.replace(plain, laser_pose=offset)
    pf = make_filter(laser_model_combination='product')
    ll = pf.log_likelihood(mounted, np.array([truth[0], laser[0]]),
                           np.array([truth[1], laser[1]]), np.array([truth[2], laser[2]]))
    assert ll[0] > ll[1] + 5.0


def test_bad_input_raises_value_error_and_changes_nothing():
    rng = np.random.default_rng(1)
    scan = make_scan((0.0, 0.0, 0.0), rng)
    pf = make_filter()
    before = pf.x.copy()
    with pytest.raises(ValueError):
        pf.update((0.0, float('nan'), 0.0), scan)
    with pytest.raises(ValueError):
        pf.update((0.0, 0.0, 0.0), Scan(np.zeros((2, 2)), 0.0, 0.1, 0.1, 5.0))
    with pytest.raises(ValueError):
        pf.update((0.0, 0.0, 0.0), Scan(np.ones(3), 0.0, float('inf'), 0.1, 5.0))
    with pytest.raises(ValueError):
        pf.update((0.0, 0.0, 0.0), Scan(np.ones(3), 0.0, 0.1, 5.0, 1.0))
    with pytest.raises(ValueError):
        pf.initialize(0.0, 0.0, 0.0, [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError):
        pf.initialize(0.0, float('inf'), 0.0, (1.0, 1.0, 1.0))
    np.testing.assert_array_equal(pf.x, before)
    assert pf.updates == 0


def test_global_localization_needs_free_cells():
    full = GridMap.from_occupancy(np.ones((10, 10), dtype=bool), 0.1)
    pf = ParticleFilter(SimLocalizerConfig(), full, np.random.default_rng(0))
    with pytest.raises(ValueError, match='no free cell'):
        pf.global_localization()


def test_global_localization_is_uniform_over_free_cells():
    pf = make_filter()
    pf.global_localization()
    assert np.all(GRID.is_free(pf.x, pf.y))
    assert np.all((pf.yaw >= -math.pi) & (pf.yaw < math.pi))
    # The L's missing corner is solid: nothing there; the open part is covered.
    assert not np.any((pf.x > 5.0) & (pf.y > 4.0))
    assert np.any((pf.x > 6.0) & (pf.y < 3.0)) and np.any((pf.x < 0.0) & (pf.y > 4.0))


def test_yaw_statistics_are_circular_across_pi():
    mean, var = circular_stats([math.pi - 0.05, -math.pi + 0.05])
    assert abs(abs(mean) - math.pi) < 1e-9
    assert var == pytest.approx(-2.0 * math.log(math.cos(0.05)))
    pf = make_filter(initial_pose_a=math.pi, initial_cov_aa=0.05 ** 2)
    est = pf.estimate()
    assert abs(float(wrap_angle(est.yaw - math.pi))) < 0.02
    # -2 ln R ~= sigma^2 for a small spread, instead of ~pi^2 for a naive variance.
    assert est.covariance[5, 5] == pytest.approx(0.05 ** 2, rel=0.2)
    # One cluster even though it straddles +-pi.
    assert len(np.unique(cluster_labels(pf.x, pf.y, pf.yaw))) == 1


def test_uniform_yaw_gives_a_huge_yaw_variance_and_identical_yaws_zero():
    yaw = np.random.default_rng(0).uniform(-math.pi, math.pi, 2000)
    assert circular_stats(yaw)[1] > 5.0
    assert circular_stats(np.full(5, 2.0))[1] == pytest.approx(0.0, abs=1e-12)
    assert math.isfinite(circular_stats([0.0, math.pi])[1])


def test_estimate_takes_the_heaviest_cluster_mean_and_the_whole_covariance():
    pf = make_filter()
    rng = np.random.default_rng(0)
    n_a, n_b = 1200, 800
    pf._set(np.r_[rng.normal(1.0, 0.05, n_a), rng.normal(4.0, 0.05, n_b)],
            np.r_[rng.normal(1.0, 0.05, n_a), rng.normal(3.0, 0.05, n_b)],
            np.r_[rng.normal(0.0, 0.02, n_a), rng.normal(2.0, 0.02, n_b)])
    est = pf.estimate()
    assert est.x == pytest.approx(1.0, abs=0.02) and est.y == pytest.approx(1.0, abs=0.02)
    assert est.yaw == pytest.approx(0.0, abs=0.01)
    # The whole set's x variance: 0.6 * 0.4 * 3^2 between the clusters, plus 0.05^2.
    assert est.covariance[0, 0] == pytest.approx(0.24 * 9.0 + 0.0025, rel=0.05)
    assert est.covariance[0, 1] == pytest.approx(0.24 * 6.0, rel=0.05)
    assert est.covariance.shape == (6, 6) and est.covariance[2, 2] == 0.0


def test_kld_limit_matches_amcl_and_clamps():
    assert kld_sample_limit(1, 0.01, 0.99, 500, 2000) == 2000
    # k = 100: 99 / 0.02 * (1 - 2/891 + sqrt(2/891) * 0.99)^3
    b = 2.0 / (9.0 * 99)
    expected = math.ceil(99 / 0.02 * (1 - b + math.sqrt(b) * 0.99) ** 3)
    assert kld_sample_limit(100, 0.01, 0.99, 10, 100000) == expected
    limits = kld_sample_limit(np.arange(2, 400), 0.01, 0.99, 500, 2000)
    assert np.all(np.diff(limits) >= 0) and limits[0] == 500 and limits[-1] == 2000


def test_recovery_injects_random_particles_only_when_enabled():
    rng = np.random.default_rng(12)
    here, there = (0.0, 0.0, 0.0), (1.5, 6.5, 2.0)
    for alphas, expect in [((0.0, 0.0), False), ((0.001, 0.1), True)]:
        pf = make_filter(seed=2, recovery_alpha_slow=alphas[0], recovery_alpha_fast=alphas[1])
        for _ in range(5):
            pf.request_nomotion_update()
            pf.update((0.0, 0.0, 0.0), make_scan(here, rng))
        assert pf.recovery_probability() == 0.0
        # Kidnapped: the scans now come from elsewhere.
        injected = False
        for _ in range(30):
            pf.request_nomotion_update()
            pf.update((0.0, 0.0, 0.0), make_scan(there, rng))
            injected |= bool(np.any(np.hypot(pf.x - here[0], pf.y - here[1]) > 2.0))
        assert injected == expect


@pytest.mark.parametrize('key,value', [
    ('min_particles', 0), ('max_particles', 10), ('kld_err', 0.0), ('kld_z', -1.0),
    ('update_min_d', -0.1), ('resample_interval', 0), ('laser_max_beams', 1),
    ('laser_z_hit', 1.5), ('laser_sigma_hit', 0.0), ('laser_likelihood_max_dist', float('nan')),
    ('odom_alpha3', -0.2), ('recovery_alpha_fast', 2.0), ('initial_cov_aa', -1.0),
    ('transform_tolerance', -0.5), ('tf_publish_rate', 0.0), ('global_frame_id', ''),
])
def test_bad_config_names_the_key_and_value(key, value):
    with pytest.raises(ConfigError) as caught:
        SimLocalizerConfig(**{key: value}).validate()
    assert '%s=%r' % (key, value) in str(caught.value)


def test_defaults_are_amcl_turtlebot_defaults_and_valid():
    config = SimLocalizerConfig()
    config.validate()
    assert (config.min_particles, config.max_particles, config.kld_err, config.kld_z) == \
        (500, 2000, 0.01, 0.99)
    assert (config.laser_z_hit, config.laser_z_rand, config.laser_sigma_hit,
            config.laser_likelihood_max_dist, config.laser_max_beams) == (0.95, 0.05, 0.2, 2.0, 30)
    assert config.recovery_alpha_slow == config.recovery_alpha_fast == 0.0
