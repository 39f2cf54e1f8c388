#!/usr/bin/env python3
"""Generate the project's simulator maps in ``maps/`` (deterministic: no randomness).

Usage (from the repository root)::

    /usr/bin/python3 tools/make_maps.py [--out DIR]

For each map ``<name>`` it writes, in map_server format with origin [0, 0, 0], resolution
0.05 m and ``negate: 0``:

- ``<name>.yaml`` + ``<name>.pgm``: the occupancy grid (0 occupied, 254 free);
- ``<name>_fiducials.yaml``: the ArUco tags on its walls, in the fiducial_localizer format
  (``config/fiducials_example.yaml``): upright tags with a ``facing_yaw`` into the room;
- ``<name>_sim.yaml``: the scenario: start, dock, demo goal, demo kidnap put-down pose, the
  goals of the "normal driving" test and the rooms, plus per-node sections (``sim_world``,
  ``sim_localizer``, ``demo_scenario``) that a launch file loads at its top level so that each
  node finds its private parameters.

Maps:

- ``lab``: a 10 m x 8 m TurtleBot lab with a store room behind a door, benches, a table,
  shelves and a pillar placed asymmetrically (amcl can tell every corner apart), 6 tags.
- ``office``: 30 m x 20 m: a lobby on the west, two east-west corridors, eight identical
  6 m x 6 m offices (four each side, mirrored: the same furniture at the same place, so a laser
  alone can confuse them) and two meeting rooms between the corridors; four tags per office
  and per meeting room, six in the lobby and eight in the corridors.

Every rectangle is given in metres on the 0.05 m grid; a cell is occupied when its centre lies
inside an obstacle rectangle. Running the script twice writes byte-identical files.
"""
import argparse
import math
import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(ROOT, 'src'))

from lost_and_found.sim.gridmap import GridMap, save_map  # noqa: E402

#: Metres per cell of every generated map.
RESOLUTION = 0.05
#: Outer wall thickness (m).
OUTER = 0.1
#: Inner wall half thickness (m): inner walls are 0.1 m thick, centred on round coordinates.
HALF = 0.05

EAST, NORTH, WEST, SOUTH = 0.0, math.pi / 2, math.pi, -math.pi / 2


class Plan:
    """A map under construction: obstacle rectangles, tags, rooms and scenario poses.

    Attributes:
        name: the map name (file prefix).
        width: metres along x.
        height: metres along y.
        occupied: bool grid (rows bottom-up, cols), True where an obstacle is.
        fiducials: list of (id, x, y, z, facing_yaw, comment).
        rooms: list of (name, (x0, y0, x1, y1)) free-space boxes (a room may have several).
    """

    def __init__(self, name, width, height):
        """An empty ``width`` x ``height`` m area with its outer walls."""
        self.name = name
        self.width = width
        self.height = height
        self.occupied = np.zeros((_cells(height), _cells(width)), dtype=bool)
        self.fiducials = []
        self.rooms = []
        self.block(0.0, 0.0, width, OUTER)
        self.block(0.0, height - OUTER, width, height)
        self.block(0.0, 0.0, OUTER, height)
        self.block(width - OUTER, 0.0, width, height)

    def _slices(self, x0, y0, x1, y1):
        return (slice(_cells(min(y0, y1)), _cells(max(y0, y1))),
                slice(_cells(min(x0, x1)), _cells(max(x0, x1))))

    def block(self, x0, y0, x1, y1):
        """Mark the rectangle [x0, x1] x [y0, y1] (m) occupied."""
        self.occupied[self._slices(x0, y0, x1, y1)] = True

    def opening(self, x0, y0, x1, y1):
        """Clear the rectangle (a door in a wall)."""
        self.occupied[self._slices(x0, y0, x1, y1)] = False

    def hwall(self, y, x0, x1, doors=()):
        """A 0.1 m horizontal wall centred on ``y`` from x0 to x1, with (xa, xb) door gaps."""
        self.block(x0, y - HALF, x1, y + HALF)
        for xa, xb in doors:
            self.opening(xa, y - HALF, xb, y + HALF)

    def vwall(self, x, y0, y1, doors=()):
        """A 0.1 m vertical wall centred on ``x`` from y0 to y1, with (ya, yb) door gaps."""
        self.block(x - HALF, y0, x + HALF, y1)
        for ya, yb in doors:
            self.opening(x - HALF, ya, x + HALF, yb)

    def tag(self, fiducial_id, x, y, z, facing_yaw, comment):
        """An upright tag centred at (x, y, z) on a wall face, its face towards ``facing_yaw``."""
        self.fiducials.append((fiducial_id, x, y, z, facing_yaw, comment))

    def room(self, name, x0, y0, x1, y1):
        """Record a room (its free-space box) for the scenario and the tests."""
        self.rooms.append((name, (x0, y0, x1, y1)))

    def grid(self):
        """The GridMap (origin [0, 0, 0], no unknown cells)."""
        return GridMap.from_occupancy(self.occupied, RESOLUTION, (0.0, 0.0, 0.0))


def _cells(metres):
    """Number of whole cells in ``metres`` (every coordinate lies on the 0.05 m grid)."""
    return int(round(metres / RESOLUTION))


# ---------------------------------------------------------------------------------- the lab

def lab():
    """The 10 m x 8 m lab and its scenario (see the module docstring)."""
    plan = Plan('lab', 10.0, 8.0)
    # Store room in the north-east corner behind a 1 m door in its west wall.
    plan.vwall(7.0, 4.5, 8.0, doors=[(5.5, 6.5)])
    plan.hwall(4.5, 7.0, 10.0)
    # The lab is L-shaped around the store room: two boxes.
    plan.room('lab', OUTER, OUTER, 6.95, 8.0 - OUTER)
    plan.room('lab', 7.05, OUTER, 10.0 - OUTER, 4.45)
    plan.room('store', 7.05, 4.55, 10.0 - OUTER, 8.0 - OUTER)
    plan.block(0.1, 1.0, 0.9, 3.0)      # workbench along the west wall
    plan.block(3.5, 3.0, 5.0, 4.2)      # table, off-centre
    plan.block(1.5, 7.5, 4.0, 7.9)      # shelves along the north wall
    plan.block(7.5, 0.1, 9.9, 0.8)      # desk in the south-east corner
    plan.block(5.8, 6.0, 6.1, 6.3)      # pillar
    plan.block(9.4, 6.5, 9.9, 7.9)      # cabinet in the store room
    plan.tag(1, 0.1, 5.0, 0.4, EAST, 'west wall, above the bench line')
    plan.tag(2, 4.0, 0.1, 0.3, NORTH, 'south wall, middle')
    plan.tag(3, 9.9, 2.5, 0.5, WEST, 'east wall, by the south-east desk')
    plan.tag(4, 5.0, 7.9, 0.4, SOUTH, 'north wall, east of the shelves')
    plan.tag(5, 8.5, 4.45, 0.3, SOUTH, 'store room wall, facing the lab')
    plan.tag(6, 8.2, 7.9, 0.4, SOUTH, 'store room, north wall')
    scenario = {
        'start_pose': (1.5, 6.0, -math.pi / 2),
        # Robot centre 0.4 m from the south wall, facing it (Kobuki docks nose first).
        'dock_pose': (2.0, 0.5, -math.pi / 2),
        'goal': (6.0, 1.5, 0.0),
        # The store room, facing away from tag 6: only the search spin finds it.
        'kidnap_pose': (8.6, 6.6, -math.pi / 2),
        'goals': [(5.5, 5.5, 0.0), (8.5, 2.0, -math.pi / 2), (2.0, 4.0, math.pi),
                  (8.5, 6.0, math.pi / 2), (6.5, 1.5, math.pi), (1.5, 6.5, math.pi / 2)],
    }
    return plan, scenario


# ------------------------------------------------------------------------------- the office

#: Office room furniture in room coordinates: u along x from the room's west face, v from the
#: outer wall into the room (north offices are mirrored in y so every office looks the same).
_OFFICE_FURNITURE = (
    (0.6, 0.0, 2.2, 0.8),      # desk against the outer wall
    (3.6, 0.0, 5.2, 0.8),      # second desk, leaving a niche for the tag between them
    (0.0, 1.6, 0.4, 3.6),      # shelf against the west wall
    (3.6, 2.6, 4.8, 3.6),      # small table
)
#: Office door in the corridor wall, u range (m).
_OFFICE_DOOR = (4.0, 5.0)


def office():
    """The 30 m x 20 m office and its scenario (see the module docstring)."""
    plan = Plan('office', 30.0, 20.0)
    # Corridor walls (y = 6 | 8 and 12 | 14) east of the lobby, room dividers at x = 12, 18, 24.
    office_doors = [(6.05 + 6 * k + _OFFICE_DOOR[0], 6.05 + 6 * k + _OFFICE_DOOR[1])
                    for k in range(4)]
    plan.hwall(6.0, 5.95, 29.9, doors=office_doors)
    plan.hwall(8.0, 5.95, 29.9, doors=[(7.05, 8.05), (19.05, 20.05)])
    plan.hwall(12.0, 5.95, 29.9, doors=[(15.05, 16.05), (27.05, 28.05)])
    plan.hwall(14.0, 5.95, 29.9, doors=office_doors)
    for y0, y1 in ((0.1, 6.0), (8.0, 12.0), (14.0, 19.9)):
        plan.vwall(6.0, y0, y1)               # lobby's east side
    for x in (12.0, 24.0):
        plan.vwall(x, 0.1, 6.0)
        plan.vwall(x, 14.0, 19.9)
    for y0, y1 in ((0.1, 6.0), (8.0, 12.0), (14.0, 19.9)):
        plan.vwall(18.0, y0, y1)
    # Offices: south row S1..S4 (outer wall y = 0.1), north row N1..N4 (outer wall y = 19.9),
    # four tags each: ids 10 * n + 0..3 with n = 1..4 (S1..S4) and 5..8 (N1..N4).
    for k in range(4):
        x0 = 6.05 + 6 * k
        x1 = min(x0 + 5.9, 29.9)
        for row, outer, inner, sign, n in (('S', 0.1, 5.95, 1.0, k + 1),
                                           ('N', 19.9, 14.05, -1.0, k + 5)):
            for u0, v0, u1, v1 in _OFFICE_FURNITURE:
                plan.block(x0 + u0, outer + sign * v0, x0 + u1, outer + sign * v1)
            name = 'office %s%d' % (row, k + 1)
            plan.room(name.split()[1], x0, min(outer, inner), x1, max(outer, inner))
            into = NORTH if row == 'S' else SOUTH
            plan.tag(10 * n, x0 + 2.9, outer, 0.4, into, name + ', outer wall between the desks')
            plan.tag(10 * n + 1, x1, outer + sign * 4.0, 0.3, WEST, name + ', east wall')
            plan.tag(10 * n + 2, x0, outer + sign * 4.6, 0.5, EAST,
                     name + ', west wall near the corridor')
            plan.tag(10 * n + 3, x0 + 1.5, inner, 0.4, -into, name + ', corridor wall')
    # Meeting rooms M1 (x 6..18) and M2 (x 18..30) between the corridors, two tables each;
    # tags 90..93 and 94..97.
    for k, (x0, x1) in enumerate(((6.05, 17.95), (18.05, 29.9))):
        plan.block(x0 + 2.5, 9.45, x0 + 4.5, 10.55)
        plan.block(x0 + 7.5, 9.45, x0 + 9.5, 10.55)
        plan.room('M%d' % (k + 1), x0, 8.05, x1, 11.95)
        base = 90 + 4 * k
        name = 'meeting room M%d' % (k + 1)
        plan.tag(base, x0, 10.0, 0.4, EAST, name + ', west wall')
        plan.tag(base + 1, x1, 10.0, 0.4, WEST, name + ', east wall')
        plan.tag(base + 2, x0 + 6.0, 8.05, 0.3, NORTH, name + ', south wall between tables')
        plan.tag(base + 3, x0 + 6.0, 11.95, 0.3, SOUTH, name + ', north wall between tables')
    # Corridors: tags 1..8 on both walls, clear of the doors.
    plan.room('corridor_south', 6.05, 6.05, 29.9, 7.95)
    plan.room('corridor_north', 6.05, 12.05, 29.9, 13.95)
    plan.tag(1, 9.0, 6.05, 0.4, NORTH, 'south corridor, south wall, west part')
    plan.tag(2, 15.0, 7.95, 0.4, SOUTH, 'south corridor, north wall')
    plan.tag(3, 21.0, 6.05, 0.4, NORTH, 'south corridor, south wall, east part')
    plan.tag(4, 27.0, 7.95, 0.4, SOUTH, 'south corridor, north wall, east end')
    plan.tag(5, 9.0, 13.95, 0.4, SOUTH, 'north corridor, north wall, west part')
    plan.tag(6, 13.0, 12.05, 0.4, NORTH, 'north corridor, south wall')
    plan.tag(7, 21.0, 13.95, 0.4, SOUTH, 'north corridor, north wall, east part')
    plan.tag(8, 25.0, 12.05, 0.4, NORTH, 'north corridor, south wall, east end')
    # Lobby: a reception desk, two pillars and a sofa break its symmetry; tags 100..105.
    plan.room('lobby', 0.1, 0.1, 5.95, 19.9)
    plan.block(1.5, 9.3, 3.5, 10.0)
    plan.block(3.0, 4.8, 3.4, 5.2)
    plan.block(3.0, 15.0, 3.4, 15.4)
    plan.block(0.1, 17.0, 0.7, 19.0)
    plan.tag(100, 0.1, 4.0, 0.4, EAST, 'lobby, west wall, south part')
    plan.tag(101, 0.1, 13.0, 0.4, EAST, 'lobby, west wall, north part')
    plan.tag(102, 3.0, 0.1, 0.3, NORTH, 'lobby, south wall')
    plan.tag(103, 4.0, 19.9, 0.3, SOUTH, 'lobby, north wall')
    plan.tag(104, 5.95, 3.0, 0.4, WEST, 'lobby, east wall (office S1), south part')
    plan.tag(105, 5.95, 17.0, 0.4, WEST, 'lobby, east wall (office N1), north part')
    scenario = {
        'start_pose': (2.5, 7.0, 0.0),
        # Lobby, robot centre 0.4 m from the west wall, facing it.
        'dock_pose': (0.5, 11.5, math.pi),
        # Office N4 (north-east): the route runs through the lobby and the north corridor.
        'goal': (26.5, 16.5, math.pi / 2),
        # Office S2, far from the north corridor where the robot is lifted, facing the door:
        # tag 20 is behind the robot, 2.3 m away, so the search spin finds it.
        'kidnap_pose': (14.25, 2.3, math.pi / 2),
        'goals': [(9.0, 13.0, 0.0), (14.5, 16.5, math.pi / 2), (20.5, 7.0, 0.0),
                  (21.0, 3.0, -math.pi / 2), (12.0, 10.0, math.pi), (3.0, 12.5, math.pi / 2),
                  (27.0, 3.5, 0.0), (2.5, 7.0, 0.0)],
    }
    return plan, scenario


# ---------------------------------------------------------------------------------- writers

def _num(value):
    """A length as YAML text: rounded to 1e-9 m, which hides float noise like 8.950000000001."""
    text = repr(round(float(value), 9))
    return '0.0' if text == '-0.0' else text


def _angle(value):
    """An angle as YAML text, exact: a rounded pi would lie outside [-pi, pi]."""
    text = repr(float(value))
    return '0.0' if text == '-0.0' else text


def _pose(pose):
    return '[%s, %s, %s]' % (_num(pose[0]), _num(pose[1]), _angle(pose[2]))


def _box(box):
    return '[%s]' % ', '.join(_num(v) for v in box)


def write_grid(plan, out_dir):
    """Write ``<name>.yaml`` + ``<name>.pgm``."""
    yaml_path = os.path.join(out_dir, plan.name + '.yaml')
    save_map(plan.grid(), yaml_path)
    with open(yaml_path) as f:
        body = f.read()
    with open(yaml_path, 'w') as f:
        f.write('# %s: %g m x %g m, generated by tools/make_maps.py (do not edit by hand).\n'
                % (plan.name, plan.width, plan.height))
        f.write(body)


def write_fiducials(plan, out_dir):
    """Write ``<name>_fiducials.yaml`` in the fiducial_localizer format."""
    lines = [
        '# ArUco tags of the %s map, generated by tools/make_maps.py (do not edit by hand).'
        % plan.name,
        '# Format: config/fiducials_example.yaml. Each tag hangs upright on a wall face at',
        '# 0.3-0.5 m (the TurtleBot2 camera height); facing_yaw points its face into the room.',
        'frame_id: map',
        'fiducials:',
    ]
    for fiducial_id, x, y, z, facing, comment in sorted(plan.fiducials):
        lines.append('  # %s' % comment)
        lines.append('  - {id: %d, position: [%s, %s, %s], facing_yaw: %s}' % (
            fiducial_id, _num(x), _num(y), _num(z), _angle(facing)))
    with open(os.path.join(out_dir, plan.name + '_fiducials.yaml'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


def write_scenario(plan, scenario, out_dir):
    """Write ``<name>_sim.yaml``: the scenario and the per-node parameter sections."""
    start, dock = scenario['start_pose'], scenario['dock_pose']
    goal, kidnap = scenario['goal'], scenario['kidnap_pose']
    lines = [
        '# Scenario of the %s map, generated by tools/make_maps.py (do not edit by hand).'
        % plan.name,
        '# Poses are [x (m), y (m), yaw (rad)] in the map frame; every one is in free space at',
        '# least 0.3 m from any obstacle (test/unit/test_maps.py checks it).',
        '# launch/sim.launch loads this file at its top level: each node section below becomes',
        '# that node\'s private parameters; `scenario` is for tests and benchmarks.',
        '',
        'scenario:',
        '  # Map name and files (relative to this file).',
        '  map: %s' % plan.name,
        '  map_file: %s.yaml' % plan.name,
        '  fiducial_map: %s_fiducials.yaml' % plan.name,
        '  # Where the robot starts (and amcl\'s initial pose).',
        '  start_pose: %s' % _pose(start),
        '  # The robot pose when docked: against a wall, facing it.',
        '  dock_pose: %s' % _pose(dock),
        '  # Demo goal G, sent through move_base.',
        '  goal: %s' % _pose(goal),
        '  # Demo kidnap put-down pose: another room, >= 5 m from where the robot is lifted.',
        '  kidnap_pose: %s' % _pose(kidnap),
        '  # Goals of the "normal driving" test, visited in this order from start_pose.',
        '  goals:',
    ]
    lines += ['    - %s' % _pose(g) for g in scenario['goals']]
    lines.append('  # Rooms: name -> list of free-space boxes [x0, y0, x1, y1] (m).')
    lines.append('  rooms:')
    names = []
    for name, _ in plan.rooms:
        if name not in names:
            names.append(name)
    for name in names:
        boxes = [_box(box) for other, box in plan.rooms if other == name]
        lines.append('    %s: [%s]' % (name, ', '.join(boxes)))
    lines += [
        '',
        '# Private parameters of sim_world.',
        'sim_world:',
        '  start_pose: %s' % _pose(start),
        '  dock_pose: %s' % _pose(dock),
        '',
        '# Private parameters of sim_localizer: amcl\'s initial pose is the start pose (small',
        '# initial covariance, as when a person sets the pose in rviz at bring-up).',
        'sim_localizer:',
        '  initial_pose_x: %s' % _num(start[0]),
        '  initial_pose_y: %s' % _num(start[1]),
        '  initial_pose_a: %s' % _angle(start[2]),
        '',
        '# Private parameters of the demo_scenario node.',
        'demo_scenario:',
        '  start_pose: %s' % _pose(start),
        '  goal: %s' % _pose(goal),
        '  kidnap_pose: %s' % _pose(kidnap),
    ]
    with open(os.path.join(out_dir, plan.name + '_sim.yaml'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


def build_all():
    """Return [(plan, scenario)] of every map."""
    return [lab(), office()]


def write_maps(out_dir):
    """Write every map's four files into ``out_dir`` (created if missing)."""
    os.makedirs(out_dir, exist_ok=True)
    for plan, scenario in build_all():
        write_grid(plan, out_dir)
        write_fiducials(plan, out_dir)
        write_scenario(plan, scenario, out_dir)


def main(argv=None):
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=os.path.join(ROOT, 'maps'),
                        help='output folder (default: the repository\'s maps/)')
    args = parser.parse_args(argv)
    write_maps(args.out)
    print('make_maps: wrote %s' % args.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
