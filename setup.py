"""Python package setup, driven by catkin (see catkin_python_setup in CMakeLists.txt)."""
from setuptools import setup
from catkin_pkg.python_setup import generate_distutils_setup

setup(**generate_distutils_setup(
    packages=['lost_and_found', 'lost_and_found.core', 'lost_and_found.nodes',
              'lost_and_found.sim', 'lost_and_found.bench'],
    package_dir={'': 'src'},
))
