"""A private ROS graph for one benchmark run: a master on a free port and launch files on it.

The benchmark process itself becomes a node of that graph (:meth:`RosGraph.init_node`), so
it must create the graph before anything imports a master URI from the environment. Every
process the graph starts writes its output to a log file in ``log_dir``; every wait has a
wall-clock deadline and names what it waited for when it gives up.
"""
import os
import signal
import socket
import subprocess
import time

#: Wall seconds to wait for the master to answer.
MASTER_TIMEOUT = 30.0
#: Wall seconds a launch gets to exit after SIGINT before it is killed.
STOP_TIMEOUT = 20.0


class GraphError(RuntimeError):
    """The graph could not be started or a process in it died; the message says which."""


def free_port():
    """A TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(('', 0))
        return sock.getsockname()[1]


class Launched:
    """One ``roslaunch`` process of the graph."""

    def __init__(self, name, process, log_path):
        """Keep the process and where its output goes."""
        self.name = name
        self.process = process
        self.log_path = log_path

    def alive(self):
        """True while the roslaunch process runs."""
        return self.process.poll() is None

    def tail(self, lines=30):
        """The last ``lines`` lines of its log (for error messages)."""
        try:
            with open(self.log_path, errors='replace') as stream:
                return ''.join(stream.readlines()[-lines:])
        except OSError:
            return ''

    def interrupt(self):
        """Send SIGINT (roslaunch's clean shutdown) to its process group, if it still runs."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGINT)

    def reap(self, timeout=STOP_TIMEOUT):
        """Wait ``timeout`` s for it to exit, then SIGKILL the group."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5.0)

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGINT, then SIGKILL the group after ``timeout``."""
        self.interrupt()
        self.reap(timeout)


class RosGraph:
    """A master of our own on a free port, and the launch files started on it.

    Use as a context manager: everything it started is stopped on exit, also on errors.

    Args:
        log_dir: where the master's and each launch's output go (created).
        env: extra environment for every process.
    """

    def __init__(self, log_dir, env=None):
        """Nothing runs until :meth:`start` (or ``with``)."""
        self.log_dir = os.path.abspath(log_dir)
        self.port = None
        self.uri = None
        self._env = dict(env or {})
        self._master = None
        self._launches = []

    def __enter__(self):
        """Start the master."""
        self.start()
        return self

    def __exit__(self, *exc):
        """Stop every launch, then the master."""
        self.shutdown()
        return False

    @property
    def env(self):
        """The environment every process of this graph runs with."""
        env = dict(os.environ)
        env.update(self._env)
        env['ROS_MASTER_URI'] = self.uri
        env['ROS_LOG_DIR'] = os.path.join(self.log_dir, 'ros')
        env.setdefault('PYTHONDONTWRITEBYTECODE', '1')
        return env

    def start(self):
        """Start ``roscore`` on a free port and wait until it answers."""
        os.makedirs(self.log_dir, exist_ok=True)
        self.port = free_port()
        self.uri = 'http://localhost:%d' % self.port
        log = open(os.path.join(self.log_dir, 'roscore.log'), 'w')
        self._master = subprocess.Popen(['roscore', '-p', str(self.port)], stdout=log,
                                        stderr=subprocess.STDOUT, env=self.env,
                                        start_new_session=True)
        log.close()
        launched = Launched('roscore', self._master, os.path.join(self.log_dir, 'roscore.log'))
        self._launches.append(launched)
        self._wait(self._master_online, MASTER_TIMEOUT, 'the ROS master at %s' % self.uri,
                   launched)

    def _master_online(self):
        import rosgraph
        return rosgraph.Master('/bench_probe', master_uri=self.uri).is_online()

    def launch(self, name, package, launch_file, args=None):
        """Start ``roslaunch package launch_file name:=value ...`` on this graph.

        Returns:
            The :class:`Launched` process (stop it with :meth:`Launched.stop`).
        """
        command = ['roslaunch', '--wait', package, launch_file]
        command += ['%s:=%s' % (key, value) for key, value in sorted((args or {}).items())]
        log_path = os.path.join(self.log_dir, '%s.log' % name)
        with open(log_path, 'w') as log:
            log.write('$ %s\n' % ' '.join(command))
            log.flush()
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                       env=self.env, start_new_session=True)
        launched = Launched(name, process, log_path)
        self._launches.append(launched)
        return launched

    def stop(self, launched):
        """Stop one launch of this graph and forget it (its exit is no error)."""
        launched.stop()
        if launched in self._launches:
            self._launches.remove(launched)

    def init_node(self, name='bench'):
        """Make this process a node of the graph (in sim time when ``/use_sim_time`` is set)."""
        os.environ['ROS_MASTER_URI'] = self.uri
        import rospy
        rospy.init_node(name, anonymous=False, disable_signals=True)
        return rospy

    def check(self):
        """Raise :class:`GraphError` when a launched process has exited."""
        for launched in self._launches:
            if not launched.alive():
                raise GraphError('%s exited with code %s; the end of %s:\n%s' % (
                    launched.name, launched.process.returncode, launched.log_path,
                    launched.tail()))

    def wait_for(self, predicate, timeout, what, period=0.05):
        """Poll ``predicate`` until true; raise GraphError after ``timeout`` wall seconds.

        A process of the graph dying also ends the wait, with its log's last lines.
        """
        self._wait(predicate, timeout, what, None, period)

    def _wait(self, predicate, timeout, what, launched=None, period=0.05):
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return
            if launched is not None and not launched.alive():
                raise GraphError('%s exited while waiting for %s:\n%s'
                                 % (launched.name, what, launched.tail()))
            if launched is None:
                self.check()
            if time.monotonic() > deadline:
                raise GraphError('timed out after %.0f s (wall) waiting for %s'
                                 % (timeout, what))
            time.sleep(period)   # polling a condition with a deadline, not synchronising

    def shutdown(self):
        """Stop every launch at once (SIGINT), then the master; kill what does not exit."""
        launches = [launched for launched in self._launches if launched.alive()]
        master = [launched for launched in launches if launched.process is self._master]
        for group in ([launched for launched in launches if launched not in master], master):
            for launched in group:
                try:
                    launched.interrupt()
                except OSError:
                    pass
            for launched in group:
                try:
                    launched.reap()
                except (OSError, subprocess.SubprocessError):
                    pass
        self._launches = []
