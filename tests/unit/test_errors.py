"""trustcal.errors.foreign_package: the one message of the workflow's config check and of its jobs."""

from trustcal.errors import foreign_package


def test_the_workflows_own_package_is_no_problem(tmp_path):
    (tmp_path / "workflow" / "trustcal").mkdir(parents=True)
    assert foreign_package(tmp_path / "workflow", tmp_path / "workflow" / "trustcal") is None
    # the same directory reached through a symlink is still its own
    (tmp_path / "link").symlink_to(tmp_path / "workflow")
    assert foreign_package(tmp_path / "link", tmp_path / "workflow" / "trustcal") is None


def test_another_package_is_named_with_both_paths_and_the_fix(tmp_path):
    own, other = tmp_path / "a" / "workflow", tmp_path / "b" / "workflow" / "trustcal"
    (own / "trustcal").mkdir(parents=True)
    other.mkdir(parents=True)
    message = foreign_package(own, other)
    assert message.count("\n") == 0
    assert f"trustcal package of {other}" in message and f"its own ({own / 'trustcal'})" in message
    assert f"run the Snakefile of {tmp_path / 'b'}" in message
    assert f"pip install -e {tmp_path / 'a'}" in message
