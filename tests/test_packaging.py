"""The project's own files must agree with each other, so installs cannot drift."""
import pathlib
import re
import tomllib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pytorch": "torch"}
NOT_RUNTIME = {"python", "pip"}


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ \[;]", spec.strip(), maxsplit=1)[0].lower()


def test_environment_yml_names_the_same_runtime_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_names = {_name(d) for d in project["dependencies"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    conda_names = {CONDA_TO_PIP.get(_name(d), _name(d)) for d in conda} - NOT_RUNTIME
    assert conda_names == pip_names


def test_environment_yml_installs_the_project_itself():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert any(line.startswith("-e .") or line.startswith(".") for line in pip_section)
    assert env["name"] and env["channels"]


def test_torch_stays_below_2_14_everywhere():
    """A range admitting 2.14 pulls a multi-GB CUDA build on our machines."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_spec = next(d for d in project["dependencies"] if _name(d) == "torch")
    assert "<2.14" in torch_spec.replace(" ", "")
    assert "<2.14" in (ROOT / "environment.yml").read_text().replace(" ", "")


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
