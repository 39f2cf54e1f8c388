"""launch/lost_and_found.launch: every node, every remap through an <arg>."""
import os
import re
import xml.etree.ElementTree as ElementTree

import pytest

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
LAUNCH = os.path.join(ROOT, 'launch', 'lost_and_found.launch')
NODES = {'kidnap_monitor', 'lost_detector', 'lost_service', 'lost_and_found',
         'fiducial_localizer', 'panorama_localizer'}


@pytest.fixture(scope='module')
def launch():
    return ElementTree.parse(LAUNCH).getroot()


def test_all_six_nodes_with_executables(launch):
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


def test_the_frame_args_reach_every_node_that_reads_those_frames(launch):
    nodes = {n.get('type'): n for n in launch.iter('node')}

    def params(name):
        return {p.get('name'): p.get('value') for p in nodes[name].iter('param')}
    # lost_detector's strip rule (on in the default file) and panorama_localizer both place
    # returns by odometry: an odom_frame other than odom must reach both
    assert params('lost_detector')['strip_check/odom_frame'] == '$(arg odom_frame)'
    assert params('lost_detector')['scan_check/base_frame'] == '$(arg base_frame)'
    assert params('panorama_localizer')['odom_frame'] == '$(arg odom_frame)'
    # lost_service takes pose fixes in map_frame only: the tag map's frame must be it
    for name in ('lost_service', 'lost_and_found', 'fiducial_localizer', 'panorama_localizer'):
        assert params(name)['map_frame'] == '$(arg map_frame)', name


def test_lost_service_reaches_both_amcl_services_through_args(launch):
    node = next(n for n in launch.iter('node') if n.get('type') == 'lost_service')
    remaps = {r.get('from'): r.get('to') for r in node.iter('remap')}
    assert remaps['global_localization'] == '$(arg global_localization_service)'
    assert remaps['request_nomotion_update'] == '$(arg nomotion_update_service)'


def readme_launch_table():
    """{arg: default} of the README's table of lost_and_found.launch's args."""
    with open(os.path.join(ROOT, 'README.md')) as stream:
        text = stream.read()
    section = text.split('\n## Launch\n', 1)[1].split('\n## ', 1)[0]
    rows = re.findall(r'^\| `(\w+)` \| ([^|]*) \|', section, re.MULTILINE)
    # `value`, or "none: required ..." for an arg without a default (None)
    return {name: cell[1:-1] if cell.startswith('`') else None for name, cell in rows
            if cell.startswith('`') or cell.startswith('none: required')}


def test_the_readme_lists_every_arg_with_its_default(launch):
    table = readme_launch_table()
    defaults = {a.get('name'): a.get('default') for a in launch.iter('arg')}
    defaults = {name: None if value is None else value.replace('$(find lost_and_found)/', '')
                for name, value in defaults.items()}
    assert table == defaults


def test_the_fiducial_map_must_be_given_unless_the_tags_are_off():
    """No made-up tag file by default: roslaunch refuses without one, unless use_fiducials is
    false."""
    roslaunch_core = pytest.importorskip('roslaunch.core')
    with pytest.raises(roslaunch_core.RLException, match='fiducial_map'):
        resolve(LAUNCH, {})
    config = resolve(LAUNCH, {'use_fiducials': 'false'})
    assert not any(node.type == 'fiducial_localizer' for node in config.nodes)
    tags = os.path.join(ROOT, 'config', 'fiducials_example.yaml')
    config = resolve(LAUNCH, {'fiducial_map': tags})
    assert config.params['/fiducial_localizer/fiducial_map'].value == tags


def test_default_config_files_exist(launch):
    for arg in launch.iter('arg'):
        default = arg.get('default', '')
        if default.startswith('$(find lost_and_found)/'):
            path = os.path.join(ROOT, default[len('$(find lost_and_found)/'):])
            assert os.path.isfile(path), path


SIM_LAUNCH = os.path.join(ROOT, 'launch', 'sim.launch')
DEMO_LAUNCH = os.path.join(ROOT, 'launch', 'demo.launch')


def resolve(path, launch_args):
    """roslaunch's configuration of ``path`` with ``launch_args`` (no master, nothing runs)."""
    roslaunch_config = pytest.importorskip('roslaunch.config')
    argv = ['%s:=%s' % item for item in sorted(launch_args.items())]
    return roslaunch_config.load_config_default([(path, argv)], None)


def sim_world_params(launch_args):
    """sim_world's private parameters as roslaunch resolves sim.launch with ``launch_args``."""
    config = resolve(SIM_LAUNCH, launch_args)
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


def test_demo_launch_without_fiducials_runs_no_tag_node_and_waits_for_none(tmp_path):
    from lost_and_found.nodes.demo_scenario import required_nodes
    from lost_and_found.sim.scenario import DemoConfig
    config = resolve(DEMO_LAUNCH, {'use_fiducials': 'false',
                                   'fiducial_map': str(tmp_path / 'absent.yaml')})
    assert 'fiducial_localizer' not in {n.name for n in config.nodes}
    assert config.params['/sim_world/fiducial_map'].value == ''
    demo_map = config.params['/demo_scenario/fiducial_map'].value
    assert demo_map == ''
    assert 'fiducial_localizer' not in required_nodes(DemoConfig(fiducial_map=demo_map))


def test_demo_launch_with_fiducials_passes_the_tag_file_to_all_three(tmp_path):
    from lost_and_found.nodes.demo_scenario import required_nodes
    from lost_and_found.sim.scenario import DemoConfig
    path = str(tmp_path / 'tags.yaml')
    config = resolve(DEMO_LAUNCH, {'fiducial_map': path})
    assert 'fiducial_localizer' in {n.name for n in config.nodes}
    for node in ('sim_world', 'fiducial_localizer', 'demo_scenario'):
        assert config.params['/%s/fiducial_map' % node].value == path, node
    assert 'fiducial_localizer' in required_nodes(DemoConfig(fiducial_map=path))


#: lost_and_found.launch's switches and parameter files that demo.launch passes on.
DEMO_PASSED_ON = ('strategy', 'use_fiducials', 'use_panorama', 'kidnap_monitor_config',
                  'lost_detector_config', 'lost_service_config', 'recovery_config',
                  'fiducial_localizer_config', 'panorama_localizer_config')


def test_demo_launch_passes_the_packages_switches_and_files_on_with_its_defaults(launch):
    demo = ElementTree.parse(DEMO_LAUNCH).getroot()
    declared = {a.get('name'): a.get('default') for a in demo.findall('arg')}
    package = {a.get('name'): a.get('default') for a in launch.iter('arg')}
    include = next(i for i in demo.iter('include') if i.get('file').endswith(
        '/lost_and_found.launch'))
    passed = {a.get('name'): a.get('value') for a in include.iter('arg')}
    for name in DEMO_PASSED_ON:
        assert declared[name] == package[name], name
        assert passed[name] == '$(arg %s)' % name, name


def test_demo_launch_takes_another_detector_file_and_panorama_off(tmp_path):
    open_beams = os.path.join(ROOT, 'config', 'lost_detector_open_beams.yaml')
    config = resolve(DEMO_LAUNCH, {'fiducial_map': str(tmp_path / 'tags.yaml'),
                                   'use_panorama': 'false',
                                   'lost_detector_config': open_beams})
    assert 'panorama_localizer' not in {n.name for n in config.nodes}
    shipped = resolve(DEMO_LAUNCH, {'fiducial_map': str(tmp_path / 'tags.yaml')})
    assert 'panorama_localizer' in {n.name for n in shipped.nodes}
    differs = [name for name, param in config.params.items()
               if name.startswith('/lost_detector/') and name in shipped.params
               and param.value != shipped.params[name].value]
    assert differs, 'the open-beam file set no lost_detector parameter of its own'
