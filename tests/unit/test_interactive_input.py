"""fairseq-interactive's reader of ``--input FILE`` decodes as its standard input does once the task is set up."""

import fileinput

import pytest

fairseq_interactive = pytest.importorskip("fairseq_cli.interactive")


@pytest.fixture
def restore_fileinput():
    """fairseq's own reader before (a task set up earlier in this process replaced it) and after the test."""
    fairseq_interactive.fileinput = fileinput
    yield
    fairseq_interactive.fileinput = fileinput


def test_an_invalid_byte_in_an_input_file_reads_as_a_lone_surrogate(tmp_path, restore_fileinput):
    from syntax_nmt.tasks.raw_inference import lenient_input_file

    path = tmp_path / "in.txt"
    path.write_bytes(b"A dog .\nBad \xff .\nend\n")
    with pytest.raises(UnicodeDecodeError):  # fairseq's own reader: strict
        list(fairseq_interactive.buffered_read(str(path), 8))
    lenient_input_file()
    lenient_input_file()  # twice changes nothing
    assert list(fairseq_interactive.buffered_read(str(path), 2)) == [["A dog .", "Bad \udcff ."], ["end"]]
    with pytest.raises(UnicodeDecodeError):  # the standard module is left alone
        with fileinput.input(files=[str(path)], openhook=fileinput.hook_encoded("utf-8")) as f:
            list(f)
    assert fairseq_interactive.fileinput.input is fileinput.input
