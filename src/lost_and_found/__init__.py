"""lost_and_found: know when a TurtleBot2 is lost, and get it found again."""
