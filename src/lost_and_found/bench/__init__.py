"""Benchmarks of lost_and_found on the real ROS graph (``rosrun lost_and_found bench``)."""
