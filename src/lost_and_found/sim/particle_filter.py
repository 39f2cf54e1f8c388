"""An amcl-like particle filter for the simulator's localizer (pure numpy, no ROS, no clock).

It reproduces what lost_and_found relies on in amcl (navigation/amcl, ROS 1):

* **When it updates.** The first scan after start-up, ``initialize`` or
  ``global_localization`` runs a sensor update without motion and forces a published estimate
  (amcl's ``pf_init_`` / ``force_publication``). After that the filter updates only when the
  odometry has moved more than ``update_min_d`` along odom x *or* odom y (amcl tests each axis,
  not the Euclidean distance) or turned more than ``update_min_a`` since the last update, or
  once after :meth:`ParticleFilter.request_nomotion_update`. An estimate is published after a
  resample (every ``resample_interval`` updates) or a forced update, exactly when amcl
  publishes ``amcl_pose``.
* **Motion model** ``diff`` with ``odom_alpha1..4``: rot1-trans-rot2 with amcl's noise terms,
  including its quirk that the expression ``alpha1 * rot^2 + alpha2 * trans^2`` is used as the
  *standard deviation* (amcl's ``diff``; ``diff-corrected`` would take its square root).
* **Likelihood field** sensor model: the distance to the nearest obstacle is precomputed per
  cell and capped at ``laser_likelihood_max_dist`` (also used off the map); at most
  ``laser_max_beams`` evenly spaced beams; beams at or beyond ``range_max``, at or below
  ``range_min`` or not finite are skipped. Each beam gives
  ``p = z_hit * exp(-d^2 / (2 sigma_hit^2)) + z_rand / range_max``. A particle's weight is
  multiplied by ``1 + sum(p^3)`` (``laser_model_combination: amcl``, amcl's own code, the
  default) or by the textbook ``prod(p)`` (``product``, summed in log space and normalised
  with the max-log trick). The product is far sharper: after ``global_localization`` one
  update collapses 2000 uniform particles onto the few best ones, usually a wrong place with
  a covariance of a few centimetres, whereas amcl's sum keeps the covariance huge for many
  updates, which is what lost_and_found's detector expects from amcl.
* **KLD-adaptive resampling** between ``min_particles`` and ``max_particles`` with amcl's
  bins (0.5 m x 0.5 m x 10 deg) and its sample bound, in which ``kld_z`` is used directly as
  the normal quantile (amcl's convention). amcl draws samples one by one until the count
  exceeds the bound for the bins filled so far; here the same stopping rule is evaluated on a
  shuffled low-variance (systematic) sample of ``max_particles``, so one vectorised pass finds
  the same count.
* **Recovery** with ``recovery_alpha_slow`` / ``recovery_alpha_fast`` (0 = off, the stock
  TurtleBot2 setting): running averages of the mean particle likelihood; on resampling each
  particle is replaced by a uniformly random free pose with probability
  ``max(0, 1 - w_fast / w_slow)``, and the averages restart after any injection (amcl's rule).
  The averages are kept as logarithms, since products of 30 beam likelihoods underflow.
* **Estimate** like amcl's ``amcl_pose``: the mean of the heaviest cluster of occupied bins
  (bins touching in x, y or yaw, yaw wrapping around), with the **whole filter's** covariance:
  weighted x-y covariance, and yaw variance ``-2 ln R`` where ``R = |sum w e^{i yaw}|`` is the
  mean resultant length (amcl's formula; 0 for identical yaws, about 7.8 rad^2 for 2000 uniform
  yaws, capped at ``-2 ln 1e-12`` when R vanishes).

Poses are ``(x, y, yaw)`` in metres and radians; particles are numpy arrays ``x``, ``y``,
``yaw`` (in [-pi, pi)) and ``weights`` (summing to 1).
"""
import collections
import dataclasses
import logging
import math

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from lost_and_found.core import geometry
from lost_and_found.core.config import Checker

_log = logging.getLogger('rosout')

#: amcl's KLD histogram bin size: x (m), y (m), yaw (rad).
BIN_SIZE = (0.5, 0.5, math.radians(10.0))
#: Smallest mean resultant length used in -2 ln R (keeps the yaw variance finite).
_MIN_RESULTANT = 1e-12
#: Below this odometry translation (m) amcl's diff model sets rot1 to 0 (atan2 is noise).
_MIN_TRANSLATION = 0.01
#: Largest dense bin grid labelled for clustering (about 40 MB of labels).
_MAX_LABEL_CELLS = 10_000_000


@dataclasses.dataclass(frozen=True)
class SimLocalizerConfig:
    """Parameters of sim_localizer, with amcl's names; defaults as config/sim_localizer.yaml
    says (a stock TurtleBot2's particle counts, update thresholds and odometry noise, amcl's own
    laser model).

    Attributes:
        min_particles: fewest particles KLD sampling keeps.
        max_particles: most particles; also the count after initialisation.
        kld_err: KLD bound on the error between true and estimated distribution.
        kld_z: amcl's "upper standard normal quantile", used as z directly (amcl's way).
        update_min_d: odometry translation along odom x or y (m) that triggers an update.
        update_min_a: odometry rotation (rad) that triggers an update.
        resample_interval: filter updates between resamples.
        laser_max_beams: most beams used per update (evenly spaced, >= 2).
        laser_z_hit: weight of the Gaussian hit part of the likelihood field.
        laser_z_rand: weight of the uniform random part.
        laser_sigma_hit: standard deviation of the hit part (m).
        laser_likelihood_max_dist: cap on the obstacle distance field (m).
        laser_model_combination: ``'amcl'`` (log of 1 + sum of p^3 over beams, amcl's code)
            or ``'product'`` (sum of log p, the textbook product); not an amcl parameter.
        odom_alpha1: rotation noise from rotation.
        odom_alpha2: rotation noise from translation.
        odom_alpha3: translation noise from translation.
        odom_alpha4: translation noise from rotation.
        recovery_alpha_slow: decay of the slow likelihood average (0 disables recovery).
        recovery_alpha_fast: decay of the fast likelihood average (0 disables recovery).
        initial_pose_x: initial mean x (m, global frame).
        initial_pose_y: initial mean y (m, global frame).
        initial_pose_a: initial mean yaw (rad).
        initial_cov_xx: initial x variance (m^2).
        initial_cov_yy: initial y variance (m^2).
        initial_cov_aa: initial yaw variance (rad^2).
        transform_tolerance: how far map->odom is future-dated (s).
        tf_publish_rate: how often map->odom is re-broadcast (Hz).
        odom_frame_id: odometry frame.
        base_frame_id: robot base frame.
        global_frame_id: map frame (of amcl_pose, particlecloud, initialpose).
        map_file: map_server YAML of the map (required by the node).
        seed: random seed; negative seeds from the operating system.
        publish_map: publish the map on ``map`` (latched), standing in for map_server.
    """

    min_particles: int = 500
    max_particles: int = 2000
    kld_err: float = 0.01
    kld_z: float = 0.99
    update_min_d: float = 0.25
    update_min_a: float = 0.2
    resample_interval: int = 1
    laser_max_beams: int = 30
    laser_z_hit: float = 0.95
    laser_z_rand: float = 0.05
    laser_sigma_hit: float = 0.2
    laser_likelihood_max_dist: float = 2.0
    laser_model_combination: str = 'amcl'
    odom_alpha1: float = 0.2
    odom_alpha2: float = 0.2
    odom_alpha3: float = 0.2
    odom_alpha4: float = 0.2
    recovery_alpha_slow: float = 0.0
    recovery_alpha_fast: float = 0.0
    initial_pose_x: float = 0.0
    initial_pose_y: float = 0.0
    initial_pose_a: float = 0.0
    initial_cov_xx: float = 0.25
    initial_cov_yy: float = 0.25
    initial_cov_aa: float = (math.pi / 12.0) ** 2
    transform_tolerance: float = 0.5
    tf_publish_rate: float = 20.0
    odom_frame_id: str = 'odom'
    base_frame_id: str = 'base_footprint'
    global_frame_id: str = 'map'
    map_file: str = ''
    seed: int = -1
    publish_map: bool = True

    def validate(self):
        """Raise one ConfigError naming every bad key and value."""
        check = Checker(self)
        check.positive_int('min_particles')
        check.positive_int('max_particles')
        if isinstance(self.min_particles, int) and isinstance(self.max_particles, int) and \
                self.max_particles < self.min_particles:
            check.problem('max_particles=%r: must be >= min_particles=%r'
                          % (self.max_particles, self.min_particles))
        check.in_range('kld_err', 0.0, 1.0, low_open=True, high_open=True)
        check.positive('kld_z')
        check.non_negative('update_min_d')
        check.non_negative('update_min_a')
        check.positive_int('resample_interval')
        check.require(isinstance(self.laser_max_beams, int) and
                      not isinstance(self.laser_max_beams, bool) and self.laser_max_beams >= 2,
                      'laser_max_beams', 'be an integer >= 2')
        check.in_range('laser_z_hit', 0.0, 1.0)
        check.in_range('laser_z_rand', 0.0, 1.0)
        if check.finite('laser_z_rand') and check.finite('laser_z_hit') and \
                self.laser_z_hit + self.laser_z_rand <= 0:
            check.problem('laser_z_hit=%r, laser_z_rand=%r: at least one must be > 0'
                          % (self.laser_z_hit, self.laser_z_rand))
        check.positive('laser_sigma_hit')
        check.positive('laser_likelihood_max_dist')
        check.one_of('laser_model_combination', ('amcl', 'product'))
        for name in ('odom_alpha1', 'odom_alpha2', 'odom_alpha3', 'odom_alpha4'):
            check.non_negative(name)
        check.in_range('recovery_alpha_slow', 0.0, 1.0)
        check.in_range('recovery_alpha_fast', 0.0, 1.0)
        for name in ('initial_pose_x', 'initial_pose_y', 'initial_pose_a'):
            check.finite(name)
        for name in ('initial_cov_xx', 'initial_cov_yy', 'initial_cov_aa'):
            check.non_negative(name)
        check.non_negative('transform_tolerance')
        check.positive('tf_publish_rate')
        for name in ('odom_frame_id', 'base_frame_id', 'global_frame_id'):
            check.non_empty(name)
        check.require(isinstance(self.map_file, str), 'map_file', 'be a string')
        check.require(isinstance(self.publish_map, bool), 'publish_map', 'be true or false')
        check.require(isinstance(self.seed, int) and not isinstance(self.seed, bool), 'seed',
                      'be an integer')
        check.done()


#: A pose estimate: mean (x, y, yaw) of the heaviest cluster and the whole filter's 6x6
#: row-major covariance (x, y, z, roll, pitch, yaw) as in geometry_msgs/PoseWithCovariance.
Estimate = collections.namedtuple('Estimate', 'x y yaw covariance')

#: What one call of :meth:`ParticleFilter.update` did: ``updated`` (the filter ran) and
#: ``publish`` (a new estimate, i.e. when amcl would publish amcl_pose and map->odom).
UpdateResult = collections.namedtuple('UpdateResult', 'updated publish')


@dataclasses.dataclass(frozen=True)
class Scan:
    """A planar laser scan, as in sensor_msgs/LaserScan, plus where the laser sits.

    Attributes:
        ranges: ranges (m), one per beam; NaN/inf or out of [range_min, range_max) are skipped.
        angle_min: angle of the first beam (rad, laser frame).
        angle_increment: angle between beams (rad).
        range_min: smallest valid range (m).
        range_max: largest range (m); returns at or beyond it carry no obstacle.
        laser_pose: (x, y, yaw) of the laser in the base frame.
    """

    ranges: np.ndarray
    angle_min: float
    angle_increment: float
    range_min: float
    range_max: float
    laser_pose: tuple = (0.0, 0.0, 0.0)

    def check(self):
        """Raise ValueError unless the scan can be used."""
        ranges = np.asarray(self.ranges)
        if ranges.ndim != 1 or ranges.size == 0:
            raise ValueError('scan ranges must be a non-empty 1-D array, got shape %s'
                             % (ranges.shape,))
        values = (self.angle_min, self.angle_increment, self.range_min, self.range_max)
        if not all(math.isfinite(v) for v in values):
            raise ValueError('scan angle_min, angle_increment, range_min and range_max must '
                             'be finite, got %r' % (values,))
        if not 0.0 <= self.range_min < self.range_max:
            raise ValueError('scan needs 0 <= range_min < range_max, got %g, %g'
                             % (self.range_min, self.range_max))
        if len(self.laser_pose) != 3 or not all(math.isfinite(v) for v in self.laser_pose):
            raise ValueError('laser pose must be 3 finite numbers, got %r' % (self.laser_pose,))


def wrap_angle(angle):
    """Wrap angles (rad, scalar or array) into [-pi, pi)."""
    return geometry.wrap_angle(np.asarray(angle, dtype=float))


def circular_stats(yaw, weights=None):
    """Weighted circular mean and amcl's circular variance of angles.

    Args:
        yaw: angles (rad).
        weights: non-negative weights (default equal); need not sum to 1.

    Returns:
        (mean in [-pi, pi), -2 ln R) where R is the weighted mean resultant length.
    """
    yaw = np.asarray(yaw, dtype=float)
    weights = np.full(yaw.shape, 1.0) if weights is None else np.asarray(weights, dtype=float)
    total = weights.sum()
    c = np.dot(weights, np.cos(yaw)) / total
    s = np.dot(weights, np.sin(yaw)) / total
    resultant = max(math.hypot(c, s), _MIN_RESULTANT)
    return float(wrap_angle(math.atan2(s, c))), -2.0 * math.log(min(resultant, 1.0))


def kld_sample_limit(bins, err, z, min_particles, max_particles):
    """amcl's KLD bound on the particle count for ``bins`` occupied histogram bins.

    ``n = (k - 1) / (2 err) * (1 - 2 / (9 (k - 1)) + sqrt(2 / (9 (k - 1))) z)^3``, clamped to
    [min_particles, max_particles]; one bin (or none) gives ``max_particles``, as in amcl.

    Args:
        bins: occupied bin counts k (int or array).
        err, z: ``kld_err`` and ``kld_z``.
        min_particles, max_particles: the clamp.

    Returns:
        int array (or int) of bounds.
    """
    k = np.asarray(bins, dtype=float)
    km1 = np.maximum(k - 1.0, 1.0)
    b = 2.0 / (9.0 * km1)
    n = np.ceil(km1 / (2.0 * err) * (1.0 - b + np.sqrt(b) * z) ** 3)
    n = np.where(k <= 1, max_particles, np.clip(n, min_particles, max_particles))
    return n.astype(int) if n.ndim else int(n)


def _bin_indices(x, y, yaw):
    """Integer KLD bin indices (ix, iy, iyaw) of particles; iyaw in [0, n_yaw)."""
    n_yaw = int(round(2.0 * math.pi / BIN_SIZE[2]))
    ia = np.floor((wrap_angle(yaw) + math.pi) / BIN_SIZE[2]).astype(np.int64) % n_yaw
    return (np.floor(x / BIN_SIZE[0]).astype(np.int64),
            np.floor(y / BIN_SIZE[1]).astype(np.int64), ia, n_yaw)


def _bin_keys(x, y, yaw):
    """One int64 key per particle naming its KLD bin."""
    ix, iy, ia, n_yaw = _bin_indices(x, y, yaw)
    ix = ix - ix.min()
    iy = iy - iy.min()
    return (ix * (int(iy.max()) + 1) + iy) * n_yaw + ia


def cluster_labels(x, y, yaw):
    """Cluster particles like amcl: occupied bins that touch (26-neighbourhood) form a cluster.

    Unlike amcl's kd-tree, yaw wraps around (a cluster straddling +-pi stays one cluster).

    Returns:
        int array, the cluster (0..n_clusters-1) of each particle.
    """
    ix, iy, ia, n_yaw = _bin_indices(x, y, yaw)
    ix = ix - ix.min()
    iy = iy - iy.min()
    if (int(ix.max()) + 1) * (int(iy.max()) + 1) * (n_yaw + 1) > _MAX_LABEL_CELLS:
        # Particles scattered over a huge area (a diverged filter): every bin its own cluster.
        return np.unique(_bin_keys(x, y, yaw), return_inverse=True)[1].reshape(-1)
    # One extra yaw slice, a copy of slice 0, so labels at both ends can be joined afterwards.
    occupied = np.zeros((int(ix.max()) + 1, int(iy.max()) + 1, n_yaw + 1), dtype=bool)
    occupied[ix, iy, ia] = True
    occupied[..., n_yaw] = occupied[..., 0]
    labels, count = ndimage.label(occupied, structure=np.ones((3, 3, 3), dtype=bool))
    first, last = labels[..., 0].ravel(), labels[..., n_yaw].ravel()
    keep = first > 0
    graph = coo_matrix((np.ones(int(keep.sum())), (first[keep], last[keep])),
                       shape=(count + 1, count + 1))
    _, component = connected_components(graph, directed=False)
    merged = component[labels[ix, iy, ia]]
    _, dense = np.unique(merged, return_inverse=True)
    return dense.reshape(-1)


class ParticleFilter:
    """amcl's particle filter on a :class:`~lost_and_found.sim.gridmap.GridMap`.

    Args:
        config: a validated :class:`SimLocalizerConfig`.
        grid: the map.
        rng: a ``numpy.random.Generator`` (seed it for reproducible runs).

    The filter starts initialised at the config's initial pose and covariance (as amcl does).
    """

    def __init__(self, config, grid, rng):
        """Precompute the likelihood field and the free cells; initialise at the config pose."""
        self.config = config
        self.grid = grid
        self._rng = rng
        sigma = config.laser_sigma_hit
        cap = config.laser_likelihood_max_dist
        distance = np.minimum(grid.distance_field(), cap)
        # exp(-d^2 / 2 sigma^2) per cell, flattened; off the map counts as the capped distance.
        self._hit = np.exp(-distance.ravel() ** 2 / (2.0 * sigma * sigma))
        self._hit_outside = math.exp(-cap * cap / (2.0 * sigma * sigma))
        self._free_rows, self._free_cols = grid.free_cells()
        self.x = self.y = self.yaw = self.weights = np.zeros(0)
        self._odom_ref = None          # amcl's pf_odom_pose_; None is amcl's pf_init_ false
        self._force_update = False
        self._resample_count = 0
        self._log_w_slow = self._log_w_fast = None
        self._estimate = None
        self.updates = 0
        self.initialize(config.initial_pose_x, config.initial_pose_y, config.initial_pose_a,
                        (config.initial_cov_xx, config.initial_cov_yy, config.initial_cov_aa))

    # ----------------------------------------------------------------- initialisation
    @property
    def count(self):
        """The current number of particles."""
        return int(self.x.size)

    def initialize(self, x, y, yaw, cov):
        """Draw ``max_particles`` from a Gaussian around a pose (amcl's ``initialpose``).

        Args:
            x, y, yaw: the mean pose (m, rad).
            cov: a 3x3 covariance of (x, y, yaw) or its diagonal (var_x, var_y, var_yaw).

        Raises:
            ValueError: a non-finite pose or a covariance that is not symmetric PSD.
        """
        mean = np.array([x, y, yaw], dtype=float)
        cov = np.asarray(cov, dtype=float)
        if cov.shape == (3,):
            cov = np.diag(cov)
        if mean.shape != (3,) or not np.all(np.isfinite(mean)):
            raise ValueError('initial pose must be 3 finite numbers, got %r' % ((x, y, yaw),))
        if cov.shape != (3, 3) or not np.all(np.isfinite(cov)) or \
                not np.allclose(cov, cov.T, atol=1e-9):
            raise ValueError('initial covariance must be a finite symmetric 3x3 matrix')
        values, vectors = np.linalg.eigh(cov)
        if values.min() < -1e-9:
            raise ValueError('initial covariance is not positive semi-definite '
                             '(eigenvalues %s)' % np.round(values, 6))
        n = self.config.max_particles
        noise = self._rng.standard_normal((n, 3)) * np.sqrt(np.maximum(values, 0.0))
        samples = mean + noise @ vectors.T
        self._set(samples[:, 0], samples[:, 1], samples[:, 2])
        _log.info('particle filter initialised at (%.2f, %.2f, %.2f) with %d particles',
                  x, y, yaw, n)

    def global_localization(self):
        """Spread ``max_particles`` uniformly over the free cells, yaw uniform (amcl's service).

        Raises:
            ValueError: the map has no free cell.
        """
        if self._free_rows.size == 0:
            raise ValueError('the map has no free cell to spread particles over')
        n = self.config.max_particles
        self._set(*self._random_poses(n))
        _log.info('particle filter spread uniformly over %d free cells',
                  self._free_rows.size)

    def request_nomotion_update(self):
        """Make the next :meth:`update` run even without motion (amcl's service)."""
        self._force_update = True

    def _random_poses(self, n):
        """``n`` poses uniform over the free cells (anywhere inside a cell), yaw uniform."""
        pick = self._rng.integers(0, self._free_rows.size, n)
        cols = self._free_cols[pick] + self._rng.random(n)
        rows = self._free_rows[pick] + self._rng.random(n)
        x, y = self.grid.to_world(cols, rows)
        return x, y, self._rng.uniform(-math.pi, math.pi, n)

    def _set(self, x, y, yaw):
        """Replace the particle set (equal weights) and restart like amcl's ``pf_init``."""
        self.x = np.asarray(x, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.yaw = wrap_angle(yaw)
        self.weights = np.full(self.x.size, 1.0 / self.x.size)
        self._odom_ref = None
        self._resample_count = 0
        self._log_w_slow = self._log_w_fast = None
        self._estimate = self._compute_estimate()

    # ----------------------------------------------------------------- the update cycle
    def update(self, odom, scan):
        """Offer one scan with the odometry pose at its time; update if amcl would.

        Args:
            odom: (x, y, yaw) of the base in the odometry frame at the scan's time.
            scan: a :class:`Scan`.

        Returns:
            :class:`UpdateResult`.

        Raises:
            ValueError: a non-finite odometry pose or an unusable scan (nothing changes).
        """
        odom = tuple(float(v) for v in odom)
        if len(odom) != 3 or not all(math.isfinite(v) for v in odom):
            raise ValueError('odometry pose must be 3 finite numbers, got %r' % (odom,))
        scan.check()
        force_publish = False
        if self._odom_ref is None:
            # First scan since (re)initialisation: sensor update without motion, and publish.
            force_publish = True
            self._resample_count = 0
        else:
            dx, dy = odom[0] - self._odom_ref[0], odom[1] - self._odom_ref[1]
            dyaw = float(wrap_angle(odom[2] - self._odom_ref[2]))
            moved = abs(dx) > self.config.update_min_d or abs(dy) > self.config.update_min_d \
                or abs(dyaw) > self.config.update_min_a
            if not (moved or self._force_update):
                return UpdateResult(False, False)
            self._apply_motion(self._odom_ref, odom)
        self._odom_ref = odom
        self._force_update = False
        self._apply_sensor(scan)
        self.updates += 1
        self._resample_count += 1
        resampled = self._resample_count % self.config.resample_interval == 0
        if resampled:
            self._resample()
        if resampled or force_publish:
            self._estimate = self._compute_estimate()
        return UpdateResult(True, resampled or force_publish)

    def _apply_motion(self, old, new):
        """amcl's ``diff`` odometry model, sampled for every particle."""
        c = self.config
        dx, dy = new[0] - old[0], new[1] - old[1]
        trans = math.hypot(dx, dy)
        rot1 = 0.0 if trans < _MIN_TRANSLATION else \
            float(wrap_angle(math.atan2(dy, dx) - old[2]))
        rot2 = float(wrap_angle(new[2] - old[2] - rot1))
        # Backward motion is as noisy as forward motion: distance of each turn from 0 or pi.
        rot1_noise = min(abs(rot1), math.pi - abs(rot1))
        rot2_noise = min(abs(rot2), math.pi - abs(rot2))
        n = self.count
        normal = self._rng.standard_normal((3, n))
        # amcl's diff model passes these expressions as standard deviations, not variances.
        sigma_rot1 = c.odom_alpha1 * rot1_noise ** 2 + c.odom_alpha2 * trans ** 2
        sigma_trans = c.odom_alpha3 * trans ** 2 + c.odom_alpha4 * (rot1_noise ** 2 +
                                                                    rot2_noise ** 2)
        sigma_rot2 = c.odom_alpha1 * rot2_noise ** 2 + c.odom_alpha2 * trans ** 2
        rot1_hat = rot1 - normal[0] * sigma_rot1
        trans_hat = trans - normal[1] * sigma_trans
        rot2_hat = rot2 - normal[2] * sigma_rot2
        heading = self.yaw + rot1_hat
        self.x = self.x + trans_hat * np.cos(heading)
        self.y = self.y + trans_hat * np.sin(heading)
        self.yaw = wrap_angle(heading + rot2_hat)

    def beam_indices(self, n_ranges):
        """Indices of the at most ``laser_max_beams`` evenly spaced beams of an n-beam scan."""
        count = min(n_ranges, self.config.laser_max_beams)
        return np.unique(np.round(np.linspace(0, n_ranges - 1, count)).astype(int))

    def log_likelihood(self, scan, x=None, y=None, yaw=None):
        """Log-likelihood of ``scan`` for every particle (or the given poses), shape (n,).

        Args:
            scan: a :class:`Scan`.
            x, y, yaw: poses to evaluate (default: the particles).

        Returns:
            float array; all zeros when no selected beam is usable.
        """
        x = self.x if x is None else np.asarray(x, dtype=float)
        y = self.y if y is None else np.asarray(y, dtype=float)
        yaw = self.yaw if yaw is None else np.asarray(yaw, dtype=float)
        ranges = np.asarray(scan.ranges, dtype=float)
        index = self.beam_indices(ranges.size)
        r = ranges[index]
        with np.errstate(invalid='ignore'):
            usable = np.isfinite(r) & (r < scan.range_max) & (r > scan.range_min)
        if not usable.any():
            return np.zeros(x.size)
        r = r[usable]
        angle = scan.angle_min + index[usable] * scan.angle_increment
        lx, ly, lyaw = scan.laser_pose
        # Beam end points in the base frame, then in the map frame for every particle.
        bx = lx + r * np.cos(lyaw + angle)
        by = ly + r * np.sin(lyaw + angle)
        c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        ex = x[:, None] + c * bx - s * by
        ey = y[:, None] + s * bx + c * by
        rows, cols = self.grid.cell_index(ex, ey)
        inside = self.grid.in_bounds(rows, cols)
        flat = np.where(inside, rows * self.grid.shape[1] + cols, 0)
        hit = np.where(inside, self._hit[flat], self._hit_outside)
        p = self.config.laser_z_hit * hit + self.config.laser_z_rand / scan.range_max
        if self.config.laser_model_combination == 'amcl':
            return np.log1p((p * p * p).sum(axis=1))
        return np.log(np.maximum(p, 1e-300)).sum(axis=1)

    def _apply_sensor(self, scan):
        """Multiply the weights by the scan likelihood, normalise, track w_slow / w_fast."""
        log_lik = self.log_likelihood(scan)
        with np.errstate(divide='ignore'):
            log_w = np.log(self.weights) + log_lik
        top = log_w.max()
        if not np.isfinite(top):
            _log.warning('every particle has zero weight; resetting to equal weights')
            self.weights = np.full(self.count, 1.0 / self.count)
            return
        w = np.exp(log_w - top)
        total = w.sum()
        self.weights = w / total
        # amcl: w_avg = (sum of weight * likelihood) / n with weights summing to 1.
        log_w_avg = top + math.log(total) - math.log(self.count)
        self._log_w_slow = self._running_log_average(
            self._log_w_slow, log_w_avg, self.config.recovery_alpha_slow)
        self._log_w_fast = self._running_log_average(
            self._log_w_fast, log_w_avg, self.config.recovery_alpha_fast)

    @staticmethod
    def _running_log_average(log_avg, log_value, alpha):
        """log of ``avg + alpha (value - avg)``, starting at ``value`` (amcl's w_slow/w_fast)."""
        if log_avg is None:
            return log_value
        if alpha <= 0.0:
            return log_avg
        return float(np.logaddexp(math.log1p(-alpha) + log_avg if alpha < 1.0 else -np.inf,
                                  math.log(alpha) + log_value))

    def recovery_probability(self):
        """amcl's ``w_diff = max(0, 1 - w_fast / w_slow)`` (0 when recovery is off)."""
        c = self.config
        if c.recovery_alpha_slow <= 0.0 or c.recovery_alpha_fast <= 0.0 or \
                self._log_w_slow is None:
            return 0.0
        return max(0.0, 1.0 - math.exp(min(self._log_w_fast - self._log_w_slow, 0.0)))

    def _resample(self):
        """Low-variance resampling with a KLD-adaptive count and amcl's random injection."""
        c = self.config
        m = c.max_particles
        cumulative = np.cumsum(self.weights)
        cumulative[-1] = 1.0
        pick = np.searchsorted(cumulative, (self._rng.random() + np.arange(m)) / m)
        # Shuffled, so that any prefix is a fair sample (the systematic order is by index).
        pick = self._rng.permutation(pick)
        x, y, yaw = self.x[pick], self.y[pick], self.yaw[pick]
        w_diff = self.recovery_probability()
        if w_diff > 0.0 and self._free_rows.size:
            inject = self._rng.random(m) < w_diff
            n_inject = int(inject.sum())
            if n_inject:
                x[inject], y[inject], yaw[inject] = self._random_poses(n_inject)
            # amcl restarts both averages after a resample that may inject.
            self._log_w_slow = self._log_w_fast = None
        # amcl stops drawing as soon as the count exceeds the bound for the bins filled so far.
        keys = _bin_keys(x, y, yaw)
        first = np.zeros(m, dtype=np.int64)
        first[np.unique(keys, return_index=True)[1]] = 1
        filled = np.cumsum(first)
        limit = kld_sample_limit(filled, c.kld_err, c.kld_z, c.min_particles, m)
        above = np.nonzero(np.arange(1, m + 1) > limit)[0]
        n = int(above[0]) + 1 if above.size else m
        self.x, self.y, self.yaw = x[:n], y[:n], yaw[:n]
        self.weights = np.full(n, 1.0 / n)

    # ----------------------------------------------------------------- the estimate
    def estimate(self):
        """The latest published estimate (see the module docstring), an :class:`Estimate`."""
        return self._estimate

    def _compute_estimate(self):
        """Mean of the heaviest cluster and the whole filter's covariance."""
        w = self.weights
        labels = cluster_labels(self.x, self.y, self.yaw)
        best = np.argmax(np.bincount(labels, weights=w))
        member = labels == best
        wb = w[member]
        mean_x = float(np.dot(wb, self.x[member]) / wb.sum())
        mean_y = float(np.dot(wb, self.y[member]) / wb.sum())
        mean_yaw, _ = circular_stats(self.yaw[member], wb)
        # The whole filter's covariance (amcl's set->cov), not the cluster's.
        total = w.sum()
        mx, my = np.dot(w, self.x) / total, np.dot(w, self.y) / total
        dx, dy = self.x - mx, self.y - my
        cov = np.zeros((6, 6))
        cov[0, 0] = np.dot(w, dx * dx) / total
        cov[1, 1] = np.dot(w, dy * dy) / total
        cov[0, 1] = cov[1, 0] = np.dot(w, dx * dy) / total
        cov[5, 5] = circular_stats(self.yaw, w)[1]
        return Estimate(mean_x, mean_y, mean_yaw, cov)
