"""What a plan shows and writes: the printed sections (``sections``, ``gateway``, ``quota``, ``training``,
``tables``), the files in ``out/<stack>/`` (``artifacts``, ``outdir``), and the scan's formats (``scan``)."""
