"""The simulator on every real map in ../shared/data/maps (skipped when that folder is absent)."""
import glob
import math
import os

import numpy as np
import pytest

from lost_and_found.sim.gridmap import load_map
from lost_and_found.sim.laser import cast_rays
from lost_and_found.sim.particle_filter import ParticleFilter, SimLocalizerConfig
from lost_and_found.sim.planner import Planner
from lost_and_found.sim.world import SimWorldConfig, World

SHARED_MAPS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'data', 'maps')
PATHS = sorted(glob.glob(os.path.join(SHARED_MAPS, '*', '*.yaml')))


def open_cells(grid, count):
    """Centres of the `count` most open free cells, spread over the map (deterministic)."""
    distance = np.where(grid.free, grid.distance_field(), 0.0)
    rows, cols = np.nonzero(distance > 0.5)
    order = np.argsort(-distance[rows, cols], kind='stable')
    picks = order[np.linspace(0, len(order) - 1, count).astype(int)]
    return [tuple(float(v) for v in grid.cell_center(rows[i], cols[i])) for i in picks]


@pytest.mark.skipif(not PATHS, reason='../shared/data/maps is absent: real maps not checked')
@pytest.mark.parametrize('path', PATHS, ids=[os.path.basename(p) for p in PATHS])
def test_world_localizer_and_planner_run_on_the_real_map(path):
    grid = load_map(path)
    (x0, y0), (x1, y1) = open_cells(grid, 2)
    world = World(SimWorldConfig(map_file=path, start_pose=(x0, y0, 0.3)), grid)
    assert np.asarray(world.scan()).size == world.laser.angles.size
    # a full circle of rays agrees with the distance field: the nearest hit is the nearest wall
    around = cast_rays(grid, x0, y0, np.linspace(-math.pi, math.pi, 3600, endpoint=False),
                       100.0)
    nearest = float(grid.distance_at(x0, y0))
    assert np.isfinite(around).any()
    assert nearest - grid.resolution <= around.min() <= nearest + 2 * grid.resolution

    pf = ParticleFilter(SimLocalizerConfig(map_file=path, max_particles=2000), grid,
                        np.random.default_rng(0))
    pf.global_localization()
    assert pf.count == 2000
    assert grid.is_free(pf.x, pf.y).all(), 'global localization put particles off free space'
    estimate = pf.estimate()
    assert math.sqrt(estimate.covariance[0][0]) > 1.0, 'a uniform cloud must look lost'

    path_found = Planner(grid).plan((x0, y0), (x1, y1))
    if path_found is not None:
        assert math.hypot(path_found[-1][0] - x1, path_found[-1][1] - y1) < 0.2
