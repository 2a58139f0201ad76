"""Where cells run: in this process, on a process pool, or as Slurm jobs through submitit."""
