"""The course model: loading, lookup, and validation messages that name the file, the kata and the field."""

from __future__ import annotations

import re
import shutil

import pytest

from kata.course import CourseError, CourseNotFound, find_course_root, load_course
from tests.conftest import REPO


def edit_toml(root, old: str, new: str, count: int = 1) -> None:
    path = root / "course.toml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, count))


def problems(root) -> list[str]:
    with pytest.raises(CourseError) as info:
        load_course(root)
    return info.value.problems


def test_lists_katas_in_file_order(course):
    ids = [k.id for k in course.katas]
    assert ids[:3] == ["9.1", "9.2", "9.3"] and ids[-1] == "9.10"
    assert len(ids) == len(set(ids))


def test_find_by_id_slug_or_folder(course):
    assert course.find("9.1").slug == "softmax"
    assert course.find("softmax").id == "9.1"
    assert course.find("9.1-softmax").id == "9.1"
    with pytest.raises(KeyError, match=r"no kata '9.99'.*known: 9.1, 9.2"):
        course.find("9.99")


def test_paths_follow_id_and_slug(course):
    kata = course.find("9.1")
    assert kata.exercise == course.root / "exercises" / "9.1-softmax" / "exercise.py"
    assert kata.solution == course.root / "solutions" / "9.1-softmax" / "solution.py"
    assert kata.graders == course.root / "graders" / "9.1-softmax"
    assert kata.module_name == "softmax"
    assert course.find("9.4").module_name == "multi_head_attention"


def test_prerequisites_are_transitive(course):
    later = course.katas[-1]
    assert {k.id for k in course.prerequisites(later)} >= set(later.requires)
    for kata in course.katas:
        for pre in course.prerequisites(kata):
            assert course.index(pre) < course.index(kata), f"{kata.id} builds on later kata {pre.id}"


def test_found_by_walking_up_from_a_subfolder(course_root, monkeypatch):
    monkeypatch.delenv("KATA_COURSE")
    monkeypatch.chdir(course_root / "exercises" / "9.1-softmax")
    assert find_course_root() == course_root


def test_no_course_anywhere_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("KATA_COURSE", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CourseNotFound, match=r"no course found \(looked for course\.toml in .* and above; .*KATA_CO"):
        find_course_root()


def test_duplicate_id(course_root):
    edit_toml(course_root, 'id = "9.2"', 'id = "9.1"')
    assert any(re.search(r"course\.toml: kata 9\.1: field 'id': duplicate id '9\.1'", p) for p in problems(course_root))


def test_duplicate_slug(course_root):
    edit_toml(course_root, 'slug = "layer-norm"', 'slug = "softmax"')
    found = problems(course_root)
    assert any("kata 9.2: field 'slug': duplicate slug 'softmax'" in p for p in found)


def test_missing_exercise_solution_and_graders(course_root):
    (course_root / "exercises" / "9.1-softmax" / "exercise.py").unlink()
    (course_root / "solutions" / "9.1-softmax" / "solution.py").unlink()
    shutil.rmtree(course_root / "graders" / "9.1-softmax")
    found = problems(course_root)
    assert any("kata 9.1: exercise: missing file exercises/9.1-softmax/exercise.py" in p for p in found)
    assert any("kata 9.1: solution: missing file solutions/9.1-softmax/solution.py" in p for p in found)
    assert any("kata 9.1: graders: no test_*.py in graders/9.1-softmax" in p for p in found)
    assert all(p.startswith(str(course_root / "course.toml")) for p in found)


def test_unknown_prerequisite(course_root):
    edit_toml(course_root, 'requires = ["9.1"]', 'requires = ["9.42"]')
    assert any("kata 9.3: field 'requires': unknown prerequisite '9.42'" in p for p in problems(course_root))


def test_prerequisite_cycle(course_root):
    edit_toml(course_root, 'id = "9.1"\nslug = "softmax"\ntitle = "Numerically stable softmax"\npoints = 10\n'
              'requires = []', 'id = "9.1"\nslug = "softmax"\ntitle = "Numerically stable softmax"\npoints = 10\n'
              'requires = ["9.4"]')
    found = problems(course_root)
    assert any(re.search(r"field 'requires': prerequisite cycle (9\.\d+ -> )+9\.\d+", p) for p in found), found


def test_unknown_field_and_wrong_types(course_root):
    edit_toml(course_root, 'points = 10\nrequires = []\ntime_budget_s = 30', 'points = "ten"\nrequires = []\n'
              'time_budget_s = 30\ncolour = "blue"')
    found = problems(course_root)
    assert any("kata 9.1: field 'points': must be a positive number, found 'ten'" in p for p in found)
    assert any("kata 9.1: field 'colour': unknown field" in p for p in found)


def test_forbidden_names_must_be_dotted_torch_names(course_root):
    edit_toml(course_root, '"torch.softmax", "torch.log_softmax",', '"softmax", "torch.log_softmax",')
    assert any("kata 9.1: field 'forbidden': must be a list of dotted torch names" in p for p in problems(course_root))


def test_invalid_toml_names_the_file(course_root):
    (course_root / "course.toml").write_text("schema = 1\n[[kata]\n")
    found = problems(course_root)
    assert len(found) == 1 and "course.toml: not valid TOML" in found[0]


def test_every_problem_is_reported_at_once(course_root):
    edit_toml(course_root, 'slug = "layer-norm"', 'slug = "Layer Norm"')
    edit_toml(course_root, 'requires = ["9.1"]', 'requires = ["9.42"]')
    assert len(problems(course_root)) >= 2


def test_kata_at_a_folder(course):
    kata = course.find("9.3")
    assert course.kata_at(kata.exercise_dir) is kata
    assert course.kata_at(kata.exercise_dir / "viz") is kata
    assert course.kata_at(course.root) is None
    assert course.kata_at(course.root / "exercises") is None


def test_pictures_and_the_capstone_are_read_from_the_course(course):
    assert [k.id for k in course.with_pictures] == ["9.3", "9.4", "9.6", "9.8", "9.10"]
    assert course.find("9.4").pictures == "attention weights of every head on a sentence"
    assert course.find("9.1").pictures is None
    assert course.capstone is course.find("9.10")


def test_pictures_and_capstone_are_validated(course_root):
    edit_toml(course_root, 'pictures = "attention weights of every head on a sentence"', 'pictures = ""')
    edit_toml(course_root, 'capstone = true', 'capstone = "yes"')
    found = problems(course_root)
    assert any("kata 9.4: field 'pictures': must say in a few words what the pictures show" in p for p in found)
    assert any("kata 9.10: field 'capstone': must be true or false, found 'yes'" in p for p in found)


def test_one_kata_at_most_is_the_capstone(course_root):
    edit_toml(course_root, 'time_budget_s = 30', 'time_budget_s = 30\ncapstone = true')
    found = problems(course_root)
    assert any("field 'capstone': one kata at most is the capstone, found 9.1, 9.10" in p for p in found)


def test_the_readme_lists_the_katas_of_course_toml():
    """The README's table of katas is written by hand: it must say what course.toml says (ids and slugs, in
    order), and its first paragraphs must name the katas with pictures."""
    course = load_course(REPO)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## The katas\n", 1)[1].strip().split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [(row[0], row[1]) for row in rows] == [(k.id, k.slug) for k in course.katas]
    first, others = re.search(r"`kata viz ([\d.]+)`\s+\(and ([^)]*)\)", readme).groups()
    assert sorted([first, *others.split(", ")]) == sorted(k.id for k in course.with_pictures)


def test_warm_imports_are_torch_modules(course, course_root):
    assert course.find("9.10").warm_imports == ("torch._dynamo",) and course.find("9.1").warm_imports == ()
    edit_toml(course_root, 'time_budget_s = 30', 'time_budget_s = 30\nwarm_imports = ["numpy"]')
    found = problems(course_root)
    assert any("kata 9.1: field 'warm_imports': must be a list of dotted torch module names" in p for p in found)
