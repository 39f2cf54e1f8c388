"""tools/map_cells.py: the cells the simulator's planner and the bench count on a map."""
import numpy as np

from lost_and_found.sim.gridmap import GridMap
from tool_loader import load_tool


def test_an_open_map_counts_only_the_cells_clear_of_its_edge():
    """A 4 m x 2 m grid without a wall: the map's edge is the only wall, so the planner keeps
    the coarse cells 0.23 m inside it and the bench the fine cells 0.35 m (and half a cell)
    inside it."""
    tool = load_tool('map_cells')
    grid = GridMap.from_occupancy(np.zeros((40, 80), dtype=bool), 0.05)
    traversable, cost, free = tool.map_cells(grid)
    # Planning cells of 0.1 m: centres 0.05 + 0.1 k from the edge; 0.25 m is the first whose
    # fine cells are all >= 0.23 m clear: 40 - 2 * 2 columns by 20 - 2 * 2 rows.
    assert traversable == 36 * 16
    assert cost > traversable         # next to the edge a cell costs more than 1 per metre
    # Fine cells of 0.05 m: centres 0.025 + 0.05 k, kept from 0.375 m (0.35 + half a cell).
    assert free == (80 - 2 * 7) * (40 - 2 * 7)


def test_a_map_without_room_counts_none():
    tool = load_tool('map_cells')
    grid = GridMap.from_occupancy(np.zeros((4, 4), dtype=bool), 0.05)
    assert tool.map_cells(grid) == (0, 0.0, 0)
