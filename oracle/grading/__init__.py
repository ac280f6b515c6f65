"""Family-independent grading: a rubric, a loop over checks, and the reports it writes (table, JSON,
Gradescope results.json, batch CSV). A family supplies the checks and its grader (`Family.grade`)."""
