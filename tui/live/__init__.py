"""The reply being streamed, drawn so that a frame costs about the text it adds.

A reply is drawn as Rich draws its whole Markdown: top-level blocks one under
the other, a blank row between two. Finished blocks are drawn once and kept
(`reply`); the open block is drawn again each frame, except a fenced code
block (`code`), whose lines are lexed (in a worker thread: `lexing`) and
drawn about once each, and a long paragraph (`paragraph`), whose wrapped
rows that can no longer change are kept. What a frame shows is what Rich
draws for the text so far, row for row. No Textual widget lives here: the
reply widget hands in how to draw a Rich renderable at its width (`Draw`).
"""
