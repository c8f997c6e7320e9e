// A note under a workflow's current details (markdown in the UI): what it ignored and why, e.g. a
// signal sent with an empty form. One note, the latest; the details above it are kept.
import { getCurrentDetails, log, setCurrentDetails } from '@temporalio/workflow';

const NOTE = '\n\n**Note:** ';

/** The details without the note (what the workflow itself says). */
export const detailsWithoutNote = (): string => getCurrentDetails().split(NOTE)[0] ?? '';

/** Logs a warning and shows it as the note. */
export function noteIgnored(text: string, fields: Record<string, unknown> = {}): void {
  log.warn(text, fields);
  setCurrentDetails(`${detailsWithoutNote()}${NOTE}${text}`);
}

/** Sets the details, keeping the note under them. */
export function setDetailsKeepingNote(details: string): void {
  const note = getCurrentDetails().split(NOTE)[1];
  setCurrentDetails(note === undefined ? details : `${details}${NOTE}${note}`);
}
