"""ArUco tags for a map that ships none: hang them on its walls, spread out, and check them.

The benchmarks must run on any map_server map, but the real maps (Willow Garage, Intel, ACES)
come without a fiducial map. :func:`place_fiducials` makes one, deterministically from a seed:

1. **Candidates** are wall faces next to the robot's free region: an occupied cell and a free
   4-neighbour share a face. The face's normal is perpendicular to a line fitted through the
   faces around it that look the same way (robust to the staircase walls of SLAM maps;
   clutter, which fits no line, is skipped) and must agree with the face's own direction
   within 60 degrees. A tag needs a straight stretch
   of wall behind it and open space in front of it (``flat_width`` either side: at least 80 % of
   the cells along the face occupied behind, free in front), and a pose of the free region
   within ``standoff`` of the point ``standoff`` in front of it (its *anchor*: where a robot
   would stand to look at it).
2. **Spread**: greedy farthest-point selection in *path* distance through the free region (so
   two rooms that share a wall each get their own tag): the first tag is drawn with the seed,
   each next one is the candidate whose anchor is farthest, along the free region, from every
   tag placed so far, until that distance falls below ``spacing``. A tag joins only if the
   simulated camera sees it from its anchor.
3. **Check** (:func:`check_fiducials`): the oracle's visibility precomputation over the free
   region (:class:`lost_and_found.bench.oracle.Visibility`) gives, for every tag, whether any
   free pose sees it, and the *coverage*: the fraction of free-region poses from which a
   360 degree spin in place (no translation) brings a tag into view.

Tags hang upright at ``height`` (the camera is at 0.3 m and its vertical field of view is
+-21 degrees, so 0.3-0.5 m is seen from 0.3 m away onwards), ``offset`` in front of the wall
face, with ``facing_yaw`` pointing into the free space: the format of
``config/fiducials_example.yaml``, written by :func:`to_yaml` and read back by
:func:`lost_and_found.core.fiducial.load_fiducial_map`.
"""
import dataclasses
import math

import numpy as np
from scipy.spatial import cKDTree

from lost_and_found.bench import oracle
from lost_and_found.bench.places import CLEARANCE, FreeSpace
from lost_and_found.core.fiducial import FiducialMap, facing_yaw_rotation
from lost_and_found.core import geometry
from lost_and_found.sim.camera import Camera

#: Default least path distance (m) between two tags' viewpoints.
SPACING = 6.0
#: Default tag height (m): the camera's 0.3 m plus a little, inside the usual 0.3-0.5 m.
HEIGHT = 0.4
#: Default gap (m) between the wall face and the tag's centre: hung just off the face, well
#: inside the camera's 0.1 m occlusion tolerance.
OFFSET = 0.02
#: Default half-width (m) of the straight wall a tag needs: the tag is 0.14 m wide.
FLAT_WIDTH = 0.2
#: Default viewing distance (m) of a tag's anchor pose.
STANDOFF = 1.0
#: Default lattice spacing (m) of the free region for spreading and checking.
RESOLUTION = 0.1
#: Largest angle (rad) between the fitted wall normal and the face's own direction.
MAX_NORMAL_DEVIATION = math.radians(60.0)
#: Least fraction of wall cells behind (and free cells in front of) a tag's stretch of wall.
FLAT_FRACTION = 0.8


class PlacementError(ValueError):
    """Bad placement input (spacing, height, seed, ...); the message names the value."""


@dataclasses.dataclass(frozen=True)
class PlacedTag:
    """One generated tag.

    Attributes:
        fiducial_id: the ArUco id (1..N in placement order).
        x: tag centre (m, map frame). y: tag centre (m). z: height of its centre (m).
        facing_yaw: map yaw its face points to (rad).
        anchor: ``(x, y)`` of the free-region pose it was checked from.
    """

    fiducial_id: int
    x: float
    y: float
    z: float
    facing_yaw: float
    anchor: tuple

    def transform(self):
        """4x4 ``T_map_fid`` as :func:`load_fiducial_map` builds it from ``facing_yaw``."""
        return geometry.make_transform(facing_yaw_rotation(self.facing_yaw),
                                       (self.x, self.y, self.z))


@dataclasses.dataclass
class Candidates:
    """Wall faces a tag could hang on (parallel arrays, map frame).

    Attributes:
        x, y: tag centres (m). yaw: facing yaws (rad). anchor: (n,) lattice node of the pose
        each would be looked at from. anchor_distance: (n,) metres from the viewpoint
        ``standoff`` in front of the tag to that node.
    """

    x: np.ndarray
    y: np.ndarray
    yaw: np.ndarray
    anchor: np.ndarray
    anchor_distance: np.ndarray

    def __len__(self):
        """The number of candidates."""
        return int(self.x.size)


def _number(name, value, low, high=math.inf, low_open=False):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and (value > low if low_open else value >= low) and value <= high
    if not ok:
        raise PlacementError('%s=%r: must be a finite number %s %g%s' % (
            name, value, '>' if low_open else '>=', low,
            '' if high == math.inf else ' and <= %g' % high))
    return float(value)


def wall_candidates(grid, lattice, offset=OFFSET, flat_width=FLAT_WIDTH, standoff=STANDOFF):
    """Every wall face of ``grid`` facing the free region of ``lattice`` that can hold a tag.

    Args:
        grid: a :class:`~lost_and_found.sim.gridmap.GridMap`.
        lattice: a :class:`lost_and_found.bench.oracle.Lattice` of the free region.
        offset: gap (m) between the wall face and the tag centre.
        flat_width: half-width (m) of the straight wall and open space a tag needs.
        standoff: the anchor viewpoint's distance (m) in front of the tag, and the farthest
            a free-region node may be from it.

    Returns:
        :class:`Candidates`, in a fixed order (by cell), so placement is deterministic.
    """
    occupied, free = grid.occupied, grid.free
    res = grid.resolution
    empty = Candidates(*(np.zeros(0),) * 3, np.zeros(0, dtype=np.int64), np.zeros(0))
    if not occupied.any() or not len(lattice):
        return empty
    rows, cols = grid.shape
    faces = []
    # (dr, dc): where the free neighbour of an occupied cell is; the face's direction in grid
    # axes (col, row) is (dc, dr).
    for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
        r, c = np.nonzero(occupied)
        fr, fc = r + dr, c + dc
        ok = (fr >= 0) & (fr < rows) & (fc >= 0) & (fc < cols)
        r, c, fr, fc = r[ok], c[ok], fr[ok], fc[ok]
        ok = free[fr, fc]
        faces.append((r[ok], c[ok], np.full(int(ok.sum()), dc), np.full(int(ok.sum()), dr)))
    r, c, face_x, face_y = (np.concatenate(v) for v in zip(*faces))
    if not r.size:
        return empty
    order = np.lexsort((face_y, face_x, c, r))
    r, c, face_x, face_y = (v[order] for v in (r, c, face_x, face_y))
    nx, ny, straight = _wall_normals(r, c, face_x, face_y, flat_width / res)
    keep = straight & (nx * face_x + ny * face_y >= math.cos(MAX_NORMAL_DEVIATION))
    r, c, nx, ny, face_x, face_y = (v[keep] for v in (r, c, nx, ny, face_x, face_y))
    # The face point (grid units) midway between the two cell centres, then off the face.
    gx = c + 0.5 + 0.5 * face_x + offset / res * nx
    gy = r + 0.5 + 0.5 * face_y + offset / res * ny
    # A straight wall behind and open space in front, along the face's tangent.
    steps = np.arange(-flat_width, flat_width + 1e-9, res / 2.0) / res
    tx, ty = -ny, nx
    back = offset / res + 0.5
    wall = _cells(occupied, gx[:, None] + tx[:, None] * steps - nx[:, None] * back,
                  gy[:, None] + ty[:, None] * steps - ny[:, None] * back)
    ahead = _cells(free, gx[:, None] + tx[:, None] * steps + nx[:, None] * 1.5,
                   gy[:, None] + ty[:, None] * steps + ny[:, None] * 1.5)
    keep = (wall.mean(axis=1) >= FLAT_FRACTION) & (ahead.mean(axis=1) >= FLAT_FRACTION)
    if not keep.any():
        return empty
    gx, gy, nx, ny = gx[keep], gy[keep], nx[keep], ny[keep]
    x, y = grid.to_world(gx, gy)
    yaw = geometry.wrap_angle(np.arctan2(ny, nx) + grid.origin[2])
    view = np.column_stack([x + standoff * np.cos(yaw), y + standoff * np.sin(yaw)])
    distance, node = cKDTree(np.column_stack([lattice.xs, lattice.ys])).query(view)
    near = distance <= standoff
    return Candidates(x[near], y[near], yaw[near], node[near].astype(np.int64),
                      distance[near])


def _wall_normals(r, c, face_x, face_y, radius):
    """Unit normals (grid axes) of wall faces from a line fit of the nearby faces.

    The faces that look the same way (same ``(face_x, face_y)``) within ``radius`` cells of a
    face are fitted with a line (principal axis of their cells' scatter); the normal is
    perpendicular to it, on the face's side. Faces looking another way (the side of a desk
    against the wall) do not bend the fit. ``straight`` is False where the cells do not lie
    along a line (a pillar, clutter): the scatter across the line exceeds a tenth of that
    along it.

    Returns:
        ``(nx, ny, straight)`` arrays, one per face.
    """
    nx, ny = np.zeros(r.size), np.zeros(r.size)
    straight = np.zeros(r.size, dtype=bool)
    for fx, fy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        members = np.nonzero((face_x == fx) & (face_y == fy))[0]
        if not members.size:
            continue
        cells = np.column_stack([c[members], r[members]]).astype(float)
        tree = cKDTree(cells)
        # The ndarray output keeps zero distances: each face is its own neighbour.
        pairs = tree.sparse_distance_matrix(tree, max(radius, 1.5), output_type='ndarray')
        owner, neighbour = pairs['i'].astype(np.int64), pairs['j'].astype(np.int64)
        n = members.size
        count = np.bincount(owner, minlength=n).astype(float)
        dx = cells[neighbour, 0] - cells[owner, 0]
        dy = cells[neighbour, 1] - cells[owner, 1]
        mx = np.bincount(owner, dx, n) / count
        my = np.bincount(owner, dy, n) / count
        sxx = np.bincount(owner, dx * dx, n) / count - mx * mx
        syy = np.bincount(owner, dy * dy, n) / count - my * my
        sxy = np.bincount(owner, dx * dy, n) / count - mx * my
        tangent = 0.5 * np.arctan2(2.0 * sxy, sxx - syy)
        spread = np.sqrt((sxx - syy) ** 2 + 4.0 * sxy ** 2)
        along, across = 0.5 * (sxx + syy + spread), 0.5 * (sxx + syy - spread)
        straight[members] = (count >= 3) & (across <= 0.1 * along)
        sign = np.where(-np.sin(tangent) * fx + np.cos(tangent) * fy < 0, -1.0, 1.0)
        nx[members] = -np.sin(tangent) * sign
        ny[members] = np.cos(tangent) * sign
    return nx, ny, straight


def _cells(mask, gx, gy):
    """``mask`` at continuous grid coordinates (False off the grid)."""
    r, c = np.floor(gy).astype(np.int64), np.floor(gx).astype(np.int64)
    inside = (r >= 0) & (r < mask.shape[0]) & (c >= 0) & (c < mask.shape[1])
    out = np.zeros(r.shape, dtype=bool)
    out[inside] = mask[r[inside], c[inside]]
    return out


def place_fiducials(grid, spacing=SPACING, seed=0, height=HEIGHT, clearance=CLEARANCE,
                    camera_config=None, resolution=RESOLUTION, offset=OFFSET,
                    flat_width=FLAT_WIDTH, standoff=STANDOFF):
    """Tags on the walls of ``grid``, at least ``spacing`` apart along the free region.

    Args:
        grid: a :class:`~lost_and_found.sim.gridmap.GridMap`.
        spacing: least path distance (m) through the free region between two tags' anchors.
        seed: seed (integer >= 0) of the first tag's choice; the rest follows from it.
        height: tag centre height (m).
        clearance: the free region's clearance (m; :class:`FreeSpace`).
        camera_config: the simulator's camera (default: ``config/sim_world.yaml``).
        resolution: lattice spacing (m) of the free region.
        offset: gap (m) between the wall face and the tag centre.
        flat_width: half-width (m) of the straight wall a tag needs.
        standoff: distance (m) of the viewpoint a tag is checked from.

    Returns:
        A list of :class:`PlacedTag`, ids 1..N in placement order (empty when the map has no
        suitable wall).

    Raises:
        PlacementError: on a bad argument. PlacesError: when the map has no free region.
    """
    spacing = _number('spacing', spacing, 0.0, low_open=True)
    height = _number('height', height, 0.0)
    offset = _number('offset', offset, 0.0)
    flat_width = _number('flat_width', flat_width, 0.0)
    standoff = _number('standoff', standoff, 0.0, low_open=True)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise PlacementError('seed=%r: must be an integer >= 0' % (seed,))
    camera_config = camera_config or oracle.load_camera_config()
    region = FreeSpace(grid, clearance=clearance)
    lattice = oracle.Lattice(grid, region.mask, resolution)
    cands = wall_candidates(grid, lattice, offset, flat_width, standoff)
    if not len(cands):
        return []
    rng = np.random.default_rng(seed)
    farthest = np.full(len(cands), np.inf)      # path distance to the nearest placed tag
    alive = np.ones(len(cands), dtype=bool)
    tags = []
    pick = int(rng.integers(len(cands)))
    while True:
        alive[pick] = False
        tag = _checked_tag(grid, camera_config, cands, pick, lattice, len(tags) + 1, height)
        if tag is not None:
            tags.append(tag)
            # Nodes farther than every current nearest-tag distance change nothing (unless
            # some candidate is still unreached: then it needs its true distance).
            reach = lattice.distances(cands.anchor[pick], limit=float(farthest.max()))
            farthest = np.minimum(farthest, reach[cands.anchor])
        left = np.nonzero(alive & (farthest >= spacing))[0]
        if not left.size:
            return tags
        # Farthest first; among equals (e.g. all unreachable) the seed decides.
        best = farthest[left].max()
        ties = left[farthest[left] == best]
        pick = int(ties[0] if ties.size == 1 else rng.choice(ties))


def _checked_tag(grid, camera_config, cands, i, lattice, fiducial_id, height):
    """The :class:`PlacedTag` of candidate ``i`` if the camera sees it from its anchor."""
    node = int(cands.anchor[i])
    ax, ay = float(lattice.xs[node]), float(lattice.ys[node])
    # Rounded as the YAML writes them, so that the file holds exactly the checked tags.
    tag = PlacedTag(fiducial_id, _num(cands.x[i], 3), _num(cands.y[i], 3), _num(height, 3),
                    _num(cands.yaw[i], 6), (ax, ay))
    look = math.atan2(tag.y - ay, tag.x - ax)
    camera = Camera(camera_config, FiducialMap('map', {fiducial_id: tag.transform()}), grid)
    return tag if camera.detect((ax, ay, look)) else None


def fiducial_map_of(tags, frame_id='map'):
    """The :class:`FiducialMap` of placed tags."""
    return FiducialMap(frame_id, {t.fiducial_id: t.transform() for t in tags})


def renumber(tags):
    """The same tags with ids 1..N in their order."""
    return [dataclasses.replace(t, fiducial_id=i + 1) for i, t in enumerate(tags)]


def check_fiducials(grid, fiducial_map, camera_config=None, clearance=CLEARANCE,
                    resolution=RESOLUTION, headings=oracle.HEADINGS):
    """Which tags the camera sees from the free region, and the region's spin coverage.

    Args:
        grid: the map. fiducial_map: its tags (a :class:`FiducialMap`).
        camera_config: the simulator's camera (default: ``config/sim_world.yaml``).
        clearance: the free region's clearance (m). resolution: lattice spacing (m).
        headings: heading bins per lattice pose.

    Returns:
        A dict: ``coverage`` (fraction of free-region lattice poses from which a 360 degree
        spin sees a tag), ``poses`` (lattice poses), ``tags`` (count), ``visible`` and
        ``invisible`` (id lists).
    """
    camera_config = camera_config or oracle.load_camera_config()
    region = FreeSpace(grid, clearance=clearance)
    vis = oracle.Visibility(grid, fiducial_map, camera_config, region.mask, resolution,
                            headings)
    ids = [int(i) for i in vis.tag_ids]
    return {'coverage': vis.coverage(), 'poses': len(vis.lattice), 'tags': len(ids),
            'visible': [i for i, v in zip(ids, vis.tag_visible) if v],
            'invisible': [i for i, v in zip(ids, vis.tag_visible) if not v]}


def _num(value, digits):
    """A float rounded for YAML (no -0.0)."""
    value = round(float(value), digits)
    return 0.0 if value == 0 else value


def to_yaml(tags, header=(), frame_id='map'):
    """The fiducial map YAML text of ``tags`` (``config/fiducials_example.yaml`` format).

    Args:
        tags: :class:`PlacedTag` list.
        header: comment lines (without ``#``) written at the top.
        frame_id: the map frame.
    """
    lines = ['# %s' % h if h else '#' for h in header]
    lines += ['frame_id: %s' % frame_id, 'fiducials:']
    for t in tags:
        lines.append('  - {id: %d, position: [%r, %r, %r], facing_yaw: %r}' % (
            t.fiducial_id, _num(t.x, 3), _num(t.y, 3), _num(t.z, 3), _num(t.facing_yaw, 6)))
    return '\n'.join(lines) + '\n'


def place_and_check(grid, spacing=SPACING, seed=0, height=HEIGHT, clearance=CLEARANCE,
                    camera_config=None, resolution=RESOLUTION, headings=oracle.HEADINGS):
    """:func:`place_fiducials`, then :func:`check_fiducials`; tags no free pose sees are dropped.

    Returns:
        ``(tags, check)``: the kept tags, renumbered 1..N, and the check of the kept set with
        ``dropped`` (how many placed tags no free-region pose saw).
    """
    camera_config = camera_config or oracle.load_camera_config()
    tags = place_fiducials(grid, spacing, seed, height, clearance, camera_config, resolution)
    if not tags:
        return [], {'coverage': 0.0, 'poses': 0, 'tags': 0, 'visible': [], 'invisible': [],
                    'dropped': 0}
    check = check_fiducials(grid, fiducial_map_of(tags), camera_config, clearance,
                            resolution, headings)
    seen = set(check['visible'])
    kept = renumber([t for t in tags if t.fiducial_id in seen])
    # Dropping tags nobody sees changes no pose's view, so the coverage stays as measured.
    check = dict(check, tags=len(kept), visible=[t.fiducial_id for t in kept], invisible=[],
                 dropped=len(tags) - len(kept))
    return kept, check
