"""rospy adapters, one module per executable: params -> config, messages <-> plain values."""
