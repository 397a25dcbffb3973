"""perf_home(home, cap=None): makes HOME a private one for perf with
perf_home.sh (an empty home; with a capture directory, its vDSO in perf's
build-id cache), for this process and all it runs."""
import os
import subprocess


def perf_home(home, cap=None):
    home = os.path.abspath(home)
    sh = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'perf_home.sh')
    subprocess.run(['sh', sh, home] + ([cap] if cap else []), check=True)
    os.environ['HOME'] = home
    return home
