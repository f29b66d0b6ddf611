"""The docs site builds with ``mkdocs build --strict`` and not one warning (every nav page exists, every
relative link and anchor resolves, the API reference renders), the README stays a front page, and the docs use one form
for the training scripts."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mkdocs_problems(config_dir: Path, site_dir: Path) -> list[str]:
    """Build the site of ``config_dir/mkdocs.yml`` with ``--strict`` and return every warning and
    error line mkdocs printed (none: a clean build). Not ``-q``: it hides the warnings, and then
    a broken link passes."""
    try:
        import material, mkdocs, mkdocstrings  # noqa: F401
    except ImportError as err:     # a missing feature, not a skip: `make test` installs the docs extra
        raise AssertionError(f"the docs extra is not installed (pip install -e '.[docs]'): {err}") from None
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site_dir)],
                            cwd=config_dir, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    output = (result.stdout + result.stderr).splitlines()
    problems = [line for line in output if line.startswith(("WARNING", "ERROR"))]
    if result.returncode != 0 and not problems:
        problems = [f"mkdocs exited {result.returncode}: " + "\n".join(output[-20:])]
    return problems


def test_mkdocs_builds_strictly_without_a_warning(tmp_path):
    assert mkdocs_problems(ROOT, tmp_path / "site") == []
    assert (tmp_path / "site" / "games" / "werewolves" / "index.html").is_file()
    assert "check_game" in (tmp_path / "site" / "api" / "testing" / "index.html").read_text()


def test_the_docs_check_catches_a_planted_broken_link_and_anchor(tmp_path):
    """The same check on a copy of the docs with three planted faults: each is reported."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    for package in ROOT.glob("socialgym_*"):          # the API pages render the code (paths: [.])
        (tmp_path / package.name).symlink_to(package)
    page = tmp_path / "docs" / "getting-started.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](no-such-page.md), "
                    "[no anchor](agents_servers.md#no-such-section), [outside](../../Dockerfile)\n",
                    encoding="utf-8")
    problems = "\n".join(mkdocs_problems(tmp_path, tmp_path / "site"))
    for planted in ("no-such-page.md", "#no-such-section", "../../Dockerfile"):
        assert planted in problems, f"the planted {planted!r} was not reported:\n{problems}"


def test_readme_is_a_front_page_whose_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 15_000
    assert "make demo" in readme and "make test" in readme
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README links {target}, which is not in the repository"


def test_docs_run_the_training_scripts_as_modules():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files = [str(p.relative_to(ROOT)) for p in pages if re.search(r"python3? socialgym_training/\w+\.py", p.read_text(encoding="utf-8"))]
    assert not files, f"use `python -m socialgym_training.NAME` in {files}"
