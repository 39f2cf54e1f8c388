"""launch/lost_and_found.launch: every node, every remap through an <arg>."""
import os
import re
import xml.etree.ElementTree as ElementTree

import pytest

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
LAUNCH = os.path.join(ROOT, 'launch', 'lost_and_found.launch')
NODES = {'kidnap_monitor', 'lost_detector', 'lost_service', 'lost_and_found',
         'fiducial_localizer'}


@pytest.fixture(scope='module')
def launch():
    return ElementTree.parse(LAUNCH).getroot()


def test_all_five_nodes_with_executables(launch):
    nodes = {n.get('type'): n for n in launch.iter('node')}
    assert set(nodes) == NODES
    for name in NODES:
        assert nodes[name].get('pkg') == 'lost_and_found'
        assert os.access(os.path.join(ROOT, 'nodes', name), os.X_OK), name


def test_every_remap_and_param_file_comes_from_an_arg(launch):
    args = {a.get('name') for a in launch.iter('arg')}
    for remap in launch.iter('remap'):
        match = re.fullmatch(r'\$\(arg (\w+)\)', remap.get('to'))
        assert match and match.group(1) in args, remap.attrib
    for rosparam in launch.iter('rosparam'):
        match = re.fullmatch(r'\$\(arg (\w+)\)', rosparam.get('file'))
        assert match and match.group(1) in args, rosparam.attrib


def test_default_config_files_exist(launch):
    for arg in launch.iter('arg'):
        default = arg.get('default', '')
        if default.startswith('$(find lost_and_found)/'):
            path = os.path.join(ROOT, default[len('$(find lost_and_found)/'):])
            assert os.path.isfile(path), path


SIM_LAUNCH = os.path.join(ROOT, 'launch', 'sim.launch')


def sim_world_params(launch_args):
    """sim_world's private parameters as roslaunch resolves sim.launch with ``launch_args``."""
    roslaunch_config = pytest.importorskip('roslaunch.config')
    argv = ['%s:=%s' % item for item in sorted(launch_args.items())]
    config = roslaunch_config.load_config_default([(SIM_LAUNCH, argv)], None)
    return {name[len('/sim_world/'):]: param.value for name, param in config.params.items()
            if name.startswith('/sim_world/')}


@pytest.mark.parametrize('fiducials', [None, ''])
def test_sim_launch_without_fiducials_gives_sim_world_an_empty_fiducial_map(fiducials):
    # What the benches pass for a map without tags: an empty fiducial_map (no camera), not the
    # office map's tags (roslaunch keeps a default for `name:=`) nor a literal '""'.
    from lost_and_found.bench.simrun import fiducial_launch_args
    params = sim_world_params(fiducial_launch_args(fiducials))
    assert params['fiducial_map'] == ''


def test_sim_launch_passes_the_fiducial_map_and_requires_sim_world(tmp_path):
    from lost_and_found.bench.simrun import fiducial_launch_args
    path = str(tmp_path / 'tags.yaml')
    assert sim_world_params(fiducial_launch_args(path))['fiducial_map'] == path
    world = [n for n in ElementTree.parse(SIM_LAUNCH).getroot().iter('node')
             if n.get('name') == 'sim_world']
    assert len(world) == 1 and world[0].get('required') == 'true'
