"""Generated fiducial maps: tags on walls, facing free space, spread out, seen, loadable."""
import itertools
import math

import numpy as np
import pytest

from lost_and_found.bench import fiducials, oracle
from lost_and_found.bench.places import FreeSpace
from lost_and_found.core.fiducial import FiducialMap, load_fiducial_map
from lost_and_found.sim.camera import Camera, CameraConfig
from lost_and_found.sim.gridmap import GridMap

RES = 0.05
CAMERA = CameraConfig(pixel_noise=0.0, max_view_angle=1.309)
PILLAR = (3.0, 6.0)


def two_rooms(origin=(0.0, 0.0, 0.0)):
    """12 m x 8 m: a partition at x = 6 up to y = 5 (a door above), a 0.1 m pillar."""
    rows, cols = 160, 240
    ys, xs = (np.mgrid[0:rows, 0:cols] + 0.5) * RES
    occupied = (xs < 0.1) | (xs > 11.9) | (ys < 0.1) | (ys > 7.9)
    occupied |= (xs >= 6.0) & (xs <= 6.1) & (ys <= 5.0)
    occupied |= (np.abs(xs - PILLAR[0]) <= 0.05) & (np.abs(ys - PILLAR[1]) <= 0.05)
    return GridMap.from_occupancy(occupied, RES, origin)


GRID = two_rooms()


@pytest.fixture(scope='module')
def placed():
    return fiducials.place_fiducials(GRID, spacing=4.0, seed=0, camera_config=CAMERA)


def to_map(grid, x, y):
    """Map-frame point of a point given in the unrotated room's coordinates."""
    c, s = math.cos(grid.origin[2]), math.sin(grid.origin[2])
    return grid.origin[0] + c * x - s * y, grid.origin[1] + s * x + c * y


def test_tags_hang_on_walls_and_face_free_space(placed):
    assert len(placed) >= 6
    for tag in placed:
        c, s = math.cos(tag.facing_yaw), math.sin(tag.facing_yaw)
        assert GRID.is_occupied([tag.x - 0.04 * c], [tag.y - 0.04 * s])[0], tag
        assert not GRID.is_occupied([tag.x - 0.01 * c], [tag.y - 0.01 * s])[0], tag
        assert GRID.is_free([tag.x + 0.3 * c], [tag.y + 0.3 * s])[0], tag
        assert 0.3 <= tag.z <= 0.5


def test_wall_normals_are_square_to_the_walls(placed):
    # Every wall of this map runs along x or y: the faces point along an axis.
    for tag in placed:
        quarter = tag.facing_yaw / (math.pi / 2)
        assert quarter == pytest.approx(round(quarter), abs=1e-5), tag


def test_the_lone_pillar_gets_no_tag(placed):
    assert all(math.hypot(t.x - PILLAR[0], t.y - PILLAR[1]) > 0.5 for t in placed)


def test_both_rooms_get_tags(placed):
    assert any(t.x < 6.0 for t in placed) and any(t.x > 6.1 for t in placed)


def test_tags_respect_the_spacing_along_the_free_region(placed):
    lattice = oracle.Lattice(GRID, FreeSpace(GRID).mask, fiducials.RESOLUTION)
    nodes = {(x, y): n for n, (x, y) in enumerate(zip(lattice.xs, lattice.ys))}
    anchors = [nodes[t.anchor] for t in placed]
    for a, b in itertools.combinations(anchors, 2):
        assert lattice.distances(a)[b] >= 4.0
    # ... and the spread stops only when no wall is 4 m from every tag: a larger spacing
    # leaves fewer tags.
    assert len(fiducials.place_fiducials(GRID, spacing=8.0, camera_config=CAMERA)) \
        < len(placed)


def test_placement_is_deterministic_for_a_seed(placed):
    again = fiducials.place_fiducials(GRID, spacing=4.0, seed=0, camera_config=CAMERA)
    assert again == placed
    layouts = {tuple((t.x, t.y) for t in fiducials.place_fiducials(
        GRID, spacing=4.0, seed=seed, camera_config=CAMERA)) for seed in range(1, 5)}
    assert len(layouts | {tuple((t.x, t.y) for t in placed)}) > 1


def test_every_tag_is_seen_from_its_anchor_and_from_the_free_region(placed):
    for tag in placed:
        camera = Camera(CAMERA, FiducialMap('map', {1: tag.transform()}), GRID)
        look = math.atan2(tag.y - tag.anchor[1], tag.x - tag.anchor[0])
        assert camera.detect(tag.anchor + (look,)), tag
    check = fiducials.check_fiducials(GRID, fiducials.fiducial_map_of(placed), CAMERA,
                                      resolution=0.2, headings=12)
    assert check['invisible'] == [] and check['visible'] == [t.fiducial_id for t in placed]
    assert 0.0 < check['coverage'] <= 1.0


def test_place_and_check_numbers_the_tags_and_measures_coverage():
    tags, check = fiducials.place_and_check(GRID, spacing=4.0, camera_config=CAMERA,
                                            resolution=0.2, headings=12)
    assert [t.fiducial_id for t in tags] == list(range(1, len(tags) + 1))
    assert check['dropped'] == 0 and check['tags'] == len(tags)
    sparse, check_sparse = fiducials.place_and_check(GRID, spacing=8.0, camera_config=CAMERA,
                                                     resolution=0.2, headings=12)
    assert check_sparse['coverage'] < check['coverage']


def test_the_yaml_loads_with_the_fiducial_map_loader(placed, tmp_path):
    path = tmp_path / 'fid.yaml'
    path.write_text(fiducials.to_yaml(placed, ['generated for a test', 'seed 0']))
    text = path.read_text()
    assert text.startswith('# generated for a test\n# seed 0\nframe_id: map\nfiducials:\n')
    loaded = load_fiducial_map(str(path))
    assert sorted(loaded.poses) == [t.fiducial_id for t in placed]
    for tag in placed:
        np.testing.assert_allclose(loaded.poses[tag.fiducial_id], tag.transform(), atol=1e-12)


def test_a_rotated_map_frame_gets_tags_on_its_walls():
    grid = two_rooms(origin=(1.0, -2.0, math.pi / 2))
    tags = fiducials.place_fiducials(grid, spacing=4.0, camera_config=CAMERA)
    assert tags
    for tag in tags:
        c, s = math.cos(tag.facing_yaw), math.sin(tag.facing_yaw)
        assert grid.is_occupied([tag.x - 0.04 * c], [tag.y - 0.04 * s])[0], tag
        assert grid.is_free([tag.x + 0.3 * c], [tag.y + 0.3 * s])[0], tag


def test_a_map_without_walls_gets_no_tags():
    grid = GridMap.from_occupancy(np.zeros((40, 40), dtype=bool), RES)
    assert fiducials.place_fiducials(grid, camera_config=CAMERA) == []


def test_bad_arguments_are_named():
    with pytest.raises(fiducials.PlacementError, match='spacing'):
        fiducials.place_fiducials(GRID, spacing=0.0, camera_config=CAMERA)
    with pytest.raises(fiducials.PlacementError, match='seed'):
        fiducials.place_fiducials(GRID, seed=-1, camera_config=CAMERA)
    with pytest.raises(fiducials.PlacementError, match='height'):
        fiducials.place_fiducials(GRID, height=float('nan'), camera_config=CAMERA)


def bench_context(tmp_path, argv):
    """A bench context on ``argv`` (its inputs resolved) writing into ``tmp_path``."""
    import io
    from lost_and_found.bench import cli
    args = cli.resolve_inputs(cli.parser().parse_args(argv + ['--out', str(tmp_path / 'out')]))
    return cli.BenchContext(args, args.suite, stream=io.StringIO())


def test_bench_takes_fiducials_auto_for_a_map_and_refuses_it_without_one(tmp_path):
    from lost_and_found.bench import cli
    from lost_and_found.sim.gridmap import save_map
    save_map(GRID, str(tmp_path / 'rooms.yaml'))
    args = cli.resolve_inputs(cli.parser().parse_args(
        ['recovery', '--map', str(tmp_path / 'rooms.yaml'), '--fiducials', 'auto']))
    assert args.fiducials == 'auto'
    with pytest.raises(SystemExit, match='real-logs suite replays logs'):
        cli.resolve_inputs(cli.parser().parse_args(['real-logs', '--fiducials', 'auto']))


def test_bench_fiducials_auto_writes_the_tags_place_fiducials_would(tmp_path):
    from lost_and_found.bench import cli
    from lost_and_found.sim.gridmap import load_map, save_map
    save_map(GRID, str(tmp_path / 'rooms.yaml'))
    ctx = bench_context(tmp_path, ['recovery', '--map', str(tmp_path / 'rooms.yaml'),
                                   '--fiducials', 'auto', '--seed', '3'])
    path = cli.place_tags(ctx)
    assert path == str(tmp_path / 'out' / 'rooms_fiducials.yaml')
    expected, _ = fiducials.place_and_check(load_map(str(tmp_path / 'rooms.yaml')), seed=3,
                                            camera_config=oracle.load_camera_config())
    loaded = load_fiducial_map(path)
    assert expected and sorted(loaded.poses) == [t.fiducial_id for t in expected]
    for tag in expected:
        np.testing.assert_allclose(loaded.poses[tag.fiducial_id], tag.transform(), atol=1e-9)
    assert 'seed 3' in open(path).readline()
    assert 'tags (a spin sees one from' in ctx._stream.getvalue()


def test_bench_fiducials_auto_names_a_map_without_a_wall_for_a_tag(tmp_path):
    from lost_and_found.bench import cli
    from lost_and_found.sim.gridmap import save_map
    save_map(GridMap.from_occupancy(np.zeros((60, 60), dtype=bool), RES),
             str(tmp_path / 'open.yaml'))
    ctx = bench_context(tmp_path, ['recovery', '--map', str(tmp_path / 'open.yaml'),
                                   '--fiducials', 'auto'])
    with pytest.raises(SystemExit, match='open.yaml'):
        cli.place_tags(ctx)
