/**
 * A windowed grid: of a long list shown as rows of equal height, only the rows
 * near the viewport are rendered, and padding above and below holds the place
 * of the others, so the page scrolls as if they were all there. A library of
 * thousands then costs the browser a few rows of cards to lay out and paint, and
 * a page of items arriving only lengthens the padding.
 *
 * Columns and row height are read from the grid as the CSS lays it out (its
 * column tracks, its first card), so the style sheet stays the one place that
 * sizes cards. Every card of the grid must have the same height.
 */
import type { RefObject } from 'preact';
import { useLayoutEffect, useState } from 'preact/hooks';

/** Rows rendered beyond each edge of the viewport: the next Tab stop is always there, and fast scrolling shows no gap. */
const OVERSCAN = 2;

interface Shape { columns: number; row: number; first: number; last: number }

export interface GridWindow {
  /** The items to render: [start, end) of the list. */
  start: number;
  end: number;
  /** Padding (px) in place of the rows above and below. */
  before: number;
  after: number;
}

export function useGridWindow(grid: RefObject<HTMLElement>, count: number): GridWindow {
  const [shape, setShape] = useState<Shape>();

  useLayoutEffect(() => {
    const el = grid.current;
    if (!el) return undefined;
    const update = () => {
      const card = el.firstElementChild;
      if (!card) return;
      const style = getComputedStyle(el);
      const columns = Math.max(1, style.gridTemplateColumns.split(' ').length);
      const row = card.getBoundingClientRect().height + (parseFloat(style.rowGap) || 0);
      const rows = Math.ceil(count / columns);
      // Row i starts at top + i × row (the padding above stands for rows before the first rendered).
      const top = el.getBoundingClientRect().top + (parseFloat(style.borderTopWidth) || 0);
      const first = Math.max(0, Math.floor(-top / row) - OVERSCAN);
      const last = Math.max(first, Math.min(rows - 1, Math.floor((window.innerHeight - top) / row) + OVERSCAN));
      setShape((old) => (old && old.columns === columns && old.row === row && old.first === first && old.last === last ? old : { columns, row, first, last }));
    };
    update();
    window.addEventListener('scroll', update, { passive: true });
    window.addEventListener('resize', update);
    return () => {
      window.removeEventListener('scroll', update);
      window.removeEventListener('resize', update);
    };
  }, [grid, count]);

  // Until the grid has been measured (its first render), every item is rendered.
  if (!shape) return { start: 0, end: count, before: 0, after: 0 };
  const rows = Math.ceil(count / shape.columns);
  const first = Math.min(shape.first, Math.max(0, rows - 1));
  const last = Math.min(shape.last, rows - 1);
  return {
    start: first * shape.columns,
    end: Math.min(count, (last + 1) * shape.columns),
    before: first * shape.row,
    after: Math.max(0, rows - 1 - last) * shape.row,
  };
}
