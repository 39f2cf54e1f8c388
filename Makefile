# lost_and_found: two commands on a fresh Debian 12 machine.
#   make test   install what is missing, build, run unit tests, flake8 and rostests
#   make demo   (arrives with the simulator)
.PHONY: deps build test unit clean

deps:
	bash tools/install_deps.sh

build: deps
	bash tools/build.sh

test: build
	bash tools/run_tests.sh

# Unit tests only (no ROS master), for a quick loop while developing.
unit: build
	. build/catkin_ws/devel/setup.sh && /usr/bin/python3 -m pytest -q test/unit

clean:
	rm -rf build test-results
