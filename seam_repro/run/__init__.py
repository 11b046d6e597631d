"""Run-level orchestration: what ``replay`` does around generation (preparing an unfrozen manifest)."""
