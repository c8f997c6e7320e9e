// Runs async sections one at a time inside a workflow (handlers interleave at every await).
import { condition } from '@temporalio/workflow';

export class Serial {
  private busy = false;

  async run<T>(section: () => Promise<T>): Promise<T> {
    await condition(() => !this.busy);
    this.busy = true;
    try {
      return await section();
    } finally {
      this.busy = false;
    }
  }
}
