# lost_and_found: two commands on a fresh Debian 12 machine.
#   make test   install what is missing, build, run unit tests, flake8 and rostests
#   make demo   install, build, run the headless simulated kidnap demo (prints the timeline,
#               writes demo/kidnap_demo.png, demo/kidnap_demo.bag, demo/result.json)
#   make bench  install, build, run the standard benchmark set (an hour or more; tables in
#               build/bench/SUMMARY.md, see bench/RESULTS.md)
#   make calibrate  record the detector's training runs and fit its YAML again (tools/calibrate.py)
.PHONY: deps build test unit demo bench calibrate maps clean

deps:
	bash tools/install_deps.sh

build: deps
	bash tools/build.sh

test: build
	bash tools/run_tests.sh

demo: build
	bash tools/demo.sh $(DEMO_ARGS)

bench: build
	bash tools/bench.sh

# Record the detector's training runs and fit config/lost_detector.yaml again into
# build/calibration (about 70 min of recording, then the fit, over 25 min on 2 cores; needs
# ../shared/data; CALIBRATE_ARGS=--install to copy it over).
calibrate: build
	. build/catkin_ws/devel/setup.sh && PATH=/usr/bin:/bin:$$PATH /usr/bin/python3 tools/calibrate.py $(CALIBRATE_ARGS)

# Regenerate maps/ (deterministic: the committed files come out byte-identical).
maps: build
	. build/catkin_ws/devel/setup.sh && /usr/bin/python3 tools/make_maps.py

# Unit tests only (no ROS master), for a quick loop while developing.
unit: build
	. build/catkin_ws/devel/setup.sh && /usr/bin/python3 -m pytest -q test/unit

clean:
	rm -rf build test-results demo
