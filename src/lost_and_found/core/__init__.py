"""Pure decision code: stdlib, numpy and scikit-learn only; no rospy, messages or clock."""
