"""The wire between the judge and the student's process: messages (`frames`) and the values in them
(`values`). Pickle-free by construction: JSON headers and raw tensor bytes, each checked against caps before
anything is allocated. Imported by both sides; imports nothing else of kata's."""
