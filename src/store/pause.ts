/**
 * Test-only pause points: named places inside transactions where an interleaving test holds one
 * operation (its locks taken, its transaction open) while another runs. With no point set — always,
 * outside tests — `pausePoint` returns at once.
 */
export type PausePoint =
  | 'assertBelief:premises-locked'
  | 'retract:root-locked'
  | 'retract:cascaded'
  | 'retract:effects-reached'
  | 'claimEffect:locked'
  | 'completeEffect:locked'
  | 'adjudicate:contradiction-locked';

const points = new Map<PausePoint, () => Promise<void>>();

export function setPausePoint(name: PausePoint, wait: () => Promise<void>): void {
  points.set(name, wait);
}

export function clearPausePoints(): void {
  points.clear();
}

export async function pausePoint(name: PausePoint): Promise<void> {
  if (points.size === 0) return;
  const wait = points.get(name);
  if (wait) {
    points.delete(name);
    await wait();
  }
}
