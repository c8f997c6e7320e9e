// A node agent's offers and pre-producer as tests run them in-process: a book in a directory of
// its own, and the pre-producer of a scenario's node offering into it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { PreProduce } from '../../domain/config';
import { OfferBook, type OfferBookOptions } from '../../worker/agent/offers';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { durableFiles } from '../../storage/durable-files';
import { startPreProducing, type PreProducer } from '../../worker/agent/pre-produce';
import type { Scenario } from './scenario';
import { temporalAddress } from './temporal';

/** A book on the test's dev server; `dir` defaults to a fresh temporary directory. */
export const openTestOffers = (
  client: Client,
  options: Partial<Pick<OfferBookOptions, 'dir' | 'activate' | 'deactivate'>> = {},
): Promise<OfferBook> =>
  OfferBook.open({
    dir: options.dir ?? mkdtempSync(join(tmpdir(), 'netlease-offers-')),
    client,
    temporal: { address: temporalAddress(), namespace: 'default' },
    activate: options.activate,
    deactivate: options.deactivate,
  });

/** How many offers a book holds on disk. */
export const offersOnDisk = async (dir: string): Promise<number> => (await durableFiles(dir, '.json')).length;

/** The scenario node's pre-producer (ipam leases of the test network), offering into `offers`. */
export const preProduceOn = (
  scenario: Scenario,
  nodeName: string,
  offers: OfferBook,
  settings: Partial<PreProduce> = {},
): PreProducer =>
  startPreProducing({
    client: scenario.temporal.client,
    kube: scenario.cluster.clients,
    reader: new ClusterReader(scenario.cluster.clients.core),
    nodeName,
    taskQueue: scenario.temporal.taskQueue,
    settings: {
      network: 'netlease-test',
      pool: scenario.temporal.taskQueue,
      mode: 'ipam',
      ifName: 'eth0',
      ...settings,
    },
    offers,
  });
