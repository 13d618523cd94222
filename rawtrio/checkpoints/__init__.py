"""Checkpoints: what the agent changed in the working tree, turn by turn, and taking it back.

- `model`: the change-set record (per file: before and after, each a blob and a mode, or
  absent) and its JSON form;
- `objects`: the private content-addressed blob store under the state dir;
- `tree`: a bounded snapshot of the project tree (honouring .gitignore);
- `capture`: `TurnCheckpoints`, what the runtime calls around each tool call and at a
  turn's end;
- `paths`: where checkpoints live (`<state dir>/checkpoints`);
- `store`: where change sets live, the project size cap and retention;
- `restore`: undo and redo, with conflict detection.

docs/checkpoints.md is the user's page; docs/contracts.md ("Checkpoints") the contract.
Nothing here ever touches the user's own `.git`.
"""
