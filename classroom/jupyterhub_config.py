"""JupyterHub for a class reading qkv-viz: ``jupyterhub -f classroom/jupyterhub_config.py``.

One machine, one hub, one JupyterLab per student, all in the book's environment.
Every setting a teacher may change is an environment variable (defaults in
brackets); the README's "Teaching a class" section says which to set where.

QKV_HUB_SPAWNER   [systemd] ``systemd``: jupyterhub-systemdspawner (the ``classroom`` extra
                  installs it), each student's server in its own systemd unit, memory and CPU
                  limits enforced by cgroups (needs root and systemd). ``local``: this file's ``BookLocalSpawner``, servers as
                  plain processes of the hub's user, each process limited to QKV_HUB_MEM_LIMIT
                  of address space (no aggregate limit, no isolation between students: for
                  a trusted class or for tests).
QKV_HUB_MEM_LIMIT [2G]    per student (systemd: the whole server; local: each process)
QKV_HUB_CPU_LIMIT [1]     CPUs per student (systemd only)
QKV_HUB_IDLE      [3600]  seconds before the idle culler stops an unused server
QKV_HUB_AUTH      [pam]   ``pam`` (system accounts), ``dummy`` (tests: any user name, the
                  password QKV_HUB_PASSWORD), or any authenticator class name
QKV_HUB_USERS     []      comma-separated user names allowed in (empty: any authenticated user)
QKV_HUB_ADMINS    []      comma-separated admin user names
QKV_HUB_IP / QKV_HUB_PORT [127.0.0.1 / 8000]  where the hub listens (put a TLS proxy in front)
QKV_HUB_STATE     [/srv/qkv-viz-hub]  database, cookie secret, proxy pid; local spawner homes
QKV_HUB_PROXY     [configurable-http-proxy]  the proxy command (``make classroom`` installs it
                  from npm into .classroom/)
QKV_BOOK_PYTHON   [this Python]  the Python of the book's environment (``.venv/bin/python``)
QKV_BOOK_REPO     [this checkout]  the git repository students get the book from, by nbgitpuller
QKV_BOOK_BRANCH   [main]
QKV_HUB_EXTRA_ARGS []     more command-line options for every student's server
QKV_HUB_API_TOKEN []      if set, a service "classroom" with this token may manage users and
                  servers and use their servers' APIs (``make classroom`` uses it)

Students land on an nbgitpuller link: the first visit clones the book into their
home (``qkv-viz/``), later visits merge the book's updates without overwriting
what the student changed, then open chapter 0 in JupyterLab.
"""
import os
import resource
import sys
from pathlib import Path
from urllib.parse import urlencode

from jupyterhub.spawner import SimpleLocalProcessSpawner

c = get_config()  # noqa: F821 (JupyterHub provides it)

HERE = Path(__file__).resolve().parent
env = os.environ.get
STATE = Path(env("QKV_HUB_STATE", "/srv/qkv-viz-hub"))
STATE.mkdir(parents=True, exist_ok=True)
BOOK_PYTHON = Path(env("QKV_BOOK_PYTHON", sys.executable))
BOOK_REPO = env("QKV_BOOK_REPO", str(HERE.parent))
BOOK_BRANCH = env("QKV_BOOK_BRANCH", "main")
MEM_LIMIT = env("QKV_HUB_MEM_LIMIT", "2G")

# ---------------------------------------------------------------- hub and proxy
c.JupyterHub.ip = env("QKV_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(env("QKV_HUB_PORT", "8000"))
c.JupyterHub.hub_port = int(env("QKV_HUB_INTERNAL_PORT", "8081"))
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = [env("QKV_HUB_PROXY", "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(env('QKV_HUB_PROXY_API_PORT', '8001'))}"
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every student's server

# ---------------------------------------------------------------- who may log in
auth = env("QKV_HUB_AUTH", "pam")
if auth == "dummy":
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = env("QKV_HUB_PASSWORD") or sys.exit("QKV_HUB_PASSWORD is required")
else:
    c.JupyterHub.authenticator_class = auth
users = {u.strip() for u in env("QKV_HUB_USERS", "").split(",") if u.strip()}
if users:
    c.Authenticator.allowed_users = users
else:
    c.Authenticator.allow_all = True
c.Authenticator.admin_users = {u.strip() for u in env("QKV_HUB_ADMINS", "").split(",") if u.strip()}


# ---------------------------------------------------------------- each student's server
class BookLocalSpawner(SimpleLocalProcessSpawner):
    """Servers as local processes, each process capped at ``mem_limit`` bytes of address space.

    The cap is per process (the server and each kernel have their own), set with
    ``RLIMIT_AS`` before the server starts and inherited by its kernels: a
    student's runaway allocation fails with ``MemoryError`` in their own kernel
    instead of starving the machine. It is not a cgroup: use the systemd spawner
    for an aggregate limit and CPU shares.
    """

    def make_preexec_fn(self, name):
        setup = super().make_preexec_fn(name)
        limit = int(self.mem_limit) if self.mem_limit else None

        def preexec():
            setup()
            if limit:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        return preexec


if env("QKV_HUB_SPAWNER", "systemd") == "local":
    c.JupyterHub.spawner_class = BookLocalSpawner
    c.BookLocalSpawner.home_dir_template = str(STATE / "homes" / "{username}")
else:
    c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
    c.SystemdSpawner.dynamic_users = auth != "pam"  # no system account needed unless PAM
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.isolate_devices = True
    c.Spawner.cpu_limit = float(env("QKV_HUB_CPU_LIMIT", "1"))

c.Spawner.mem_limit = MEM_LIMIT
c.Spawner.cmd = [str(BOOK_PYTHON.parent / "jupyterhub-singleuser")]
c.Spawner.args = [  # the same offline JupyterLab as `make lab`
    "--LabApp.news_url=None",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    "--LabApp.extension_manager=readonly",
]
c.Spawner.args += env("QKV_HUB_EXTRA_ARGS", "").split()  # e.g. tests expose the app in the browser
if env("QKV_HUB_SPAWNER", "systemd") == "local" and os.geteuid() == 0:
    c.Spawner.args.append("--allow-root")  # containers and CI run as root; servers refuse otherwise
c.Spawner.environment = {"MPLBACKEND": "module://matplotlib_inline.backend_inline",
                         "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
PULL = urlencode({"repo": BOOK_REPO, "branch": BOOK_BRANCH, "targetpath": "qkv-viz",
                  "urlpath": "lab/tree/qkv-viz/notebooks/00_start_here.ipynb"})
c.Spawner.default_url = f"/git-pull?{PULL}"  # nbgitpuller: clone once, then merge updates

# ---------------------------------------------------------------- services
IDLE = int(env("QKV_HUB_IDLE", "3600"))
services = [{"name": "idle-culler",
             "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE}"]}]
roles = [{"name": "idle-culler", "services": ["idle-culler"],
          "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}]
if env("QKV_HUB_API_TOKEN"):
    services.append({"name": "classroom", "api_token": env("QKV_HUB_API_TOKEN")})
    roles.append({"name": "classroom", "services": ["classroom"],
                  "scopes": ["admin:users", "admin:servers", "access:servers", "list:users"]})
c.JupyterHub.services = services
c.JupyterHub.load_roles = roles
