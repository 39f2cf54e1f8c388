"""The 2D simulator's pure parts: maps, robot, laser, camera, particle filter, planner."""
